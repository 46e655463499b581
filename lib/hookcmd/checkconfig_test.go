package hookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
