package hookcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gpuprep/internal/hooktest"
	"gpuprep/internal/testroot"
)

// TestCheckConfigGPUFit: --check-config says which profiles fit this node's
// GPU model, why not, and what a job choosing an unfit one gets; only an
// unfit default profile that requires its values is a node problem (exit 1).
func TestCheckConfigGPUFit(t *testing.T) {
	mod, _ := testroot.ModuleRoot()
	example := filepath.Join(mod, "examples/gpuprep.toml")
	check := func(backend, config string) (int, string) {
		code, out, stderr := mainRun("prolog", nil, "--config", config, "--gpu-backend", backend, "--check-config")
		return code, out + stderr
	}
	code, out := check("mock:dgxh100", example)
	if code != 0 || !strings.Contains(out, `profile "benchmark" fits NVIDIA H100 80GB HBM3 (8 GPUs here)`) || strings.Contains(out, "does not fit") {
		t.Errorf("H100: exit %d\n%s", code, out)
	}
	code, out = check("mock:dgxa100", example)
	for _, want := range []string{
		`profile "benchmark" does not fit NVIDIA A100-SXM4-40GB (8 GPUs here): gpu_locked_clocks_mhz: 1980,1980 MHz is above GPU 0's highest SM clock (1410 MHz)`,
		`a job that chooses it gets the default profile "default"`,
		`profile "efficient" does not fit NVIDIA A100-SXM4-40GB (8 GPUs here): gpu_power_limit_w: 500 W is outside what GPU 0 takes (100..400 W); the prolog skips those values`,
		`profile "default" fits NVIDIA A100-SXM4-40GB`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("A100: missing %q\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("A100: exit %d, want 0 (only users' profiles are unfit)", code)
	}
	strict := filepath.Join(t.TempDir(), "strict.toml")
	os.WriteFile(strict, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"+
		"[profiles.default]\ngpu_locked_clocks_mhz = [1980, 1980]\nrequired = [\"gpu_locked_clocks_mhz\"]\n"), 0o644)
	if code, out = check("mock:dgxa100", strict); code != 1 || !strings.Contains(out, "the prolog fails and Slurm drains this node") {
		t.Errorf("unfit default profile: exit %d\n%s", code, out)
	}
	code, out, _ = mainRun("prolog", nil, "--config", example, "--gpu-backend", "procfs", "--root", testroot.Shared(t, "h200x2"), "--check-config")
	if code != 0 || !strings.Contains(out, "GPU values not checked") {
		t.Errorf("procfs: exit %d\n%s", code, out)
	}
}

// exampleFor is examples/gpuprep.toml as an admin installs it on a test
// node: no log file or metrics (paths outside the test), and, when
// uncomment, with every commented-out setting ("#" and then no space)
// uncommented.
func exampleFor(t *testing.T, uncomment bool) string {
	t.Helper()
	mod, _ := testroot.ModuleRoot()
	data, err := os.ReadFile(filepath.Join(mod, "examples/gpuprep.toml"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^(log_file|metrics_dir) = .*$`).ReplaceAllString(string(data), `$1 = ""`)
	if uncomment {
		text = regexp.MustCompile(`(?m)^#([^ #\n].*)$`).ReplaceAllString(text, "$1")
	}
	p := filepath.Join(t.TempDir(), "gpuprep.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExampleNeverDrains: the shipped example, installed as is on a DGX
// H100 (mock), passes --check-config, and the prolog of a job on GPUs 0
// and 1 succeeds: an admin who copies it drains no node.
func TestExampleNeverDrains(t *testing.T) {
	root, _, spool := hooktest.HealthRoot(t, "")
	cfg := exampleFor(t, false)
	base := []string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg}
	if code, out, stderr := mainRun("prolog", nil, append(base, "--check-config")...); code != 0 || strings.Contains(out, "mig:") {
		t.Errorf("--check-config: exit %d\n%s%s", code, out, stderr)
	}
	env := map[string]string{"SLURM_JOB_ID": "11", "SLURM_JOB_USER": "eve", "SLURM_JOB_GPUS": "0,1", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	if code, _, stderr := mainRun("prolog", env, append(base, "--state-dir", spool)...); code != 0 {
		t.Errorf("prolog of a job on GPUs 0,1: exit %d, %q", code, stderr)
	}
}

// TestCheckConfigNamesMIGMismatch: the example with its [mig] layouts
// uncommented, on a DGX H100 whose GPUs run without MIG: --check-config
// exits 1 and names GPUs 0 and 1, the layout wanted and what they have, as
// the prolog would refuse them; the GPUs that match are ok, and a
// partition's layout is reported without failing the check.
func TestCheckConfigNamesMIGMismatch(t *testing.T) {
	root, _, _ := hooktest.HealthRoot(t, "")
	code, out, stderr := mainRun("prolog", map[string]string{"SLURMD_NODENAME": "dgx07"},
		"--root", root, "--gpu-backend", "mock:dgxh100", "--config", exampleFor(t, true), "--check-config")
	for _, want := range []string{
		"mig: MIG mismatch on GPU 0 (0000:18:00.0): want 2x3g.40gb, found MIG disabled ([mig.layout])\n",
		"mig: MIG mismatch on GPU 1 (0000:2a:00.0): want 7x1g.10gb, found MIG disabled ([mig.layout])\n",
		"mig: GPUs 2, 3, 4, 5, 6, 7 ok: MIG disabled ([mig.layout])\n",
		"MIG layout differs on GPUs 0, 1: the prolog of a job on them fails and Slurm drains this node",
		"mig: MIG mismatch on GPU 7 (0000:db:00.0): want 7x1g.10gb, found MIG disabled ([mig.partitions.inference.layout])\n",
		"if this node is in partition inference",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if t.Failed() {
		t.Logf("output:\n%s%s", out, stderr)
	}
	// [mig.nodes."gpu[01-04]"] applies on gpu02: its layout wins.
	code, out, _ = mainRun("prolog", map[string]string{"SLURMD_NODENAME": "gpu02"},
		"--root", root, "--gpu-backend", "mock:dgxh100", "--config", exampleFor(t, true), "--check-config")
	if code != 1 || !strings.Contains(out, `mig: MIG mismatch on GPU 2 (0000:3a:00.0): want 2x3g.40gb, found MIG disabled ([mig.nodes."gpu[01-04]".layout])`) {
		t.Errorf("gpu02: exit %d\n%s", code, out)
	}
}

// TestCheckConfigRequiredKnobs: a default profile that requires a knob the
// node's backend cannot set (persistence mode through procfs, read-only)
// fails every prolog; --check-config says so and exits 1.
func TestCheckConfigRequiredKnobs(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n[profiles.default]\ngpu_persistence = true\nrequired = [\"gpu_persistence\"]\n"), 0o644)
	code, out, stderr := mainRun("prolog", nil, "--root", testroot.Shared(t, "h200x2"), "--gpu-backend", "procfs", "--config", cfg, "--check-config")
	if code != 1 || !strings.Contains(out, `profile "default" requires gpu_persistence, which this node cannot apply (`) ||
		!strings.Contains(out, "it is the default profile: the prolog fails and Slurm drains this node") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
}
