package hookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// An admin about to remove gpuprep asks what holds settings (--held, the
// package's pre-removal check), is refused a restore under a live job, and
// with --force gets the node back at its exact baseline.
func TestHeldAndRestoreAll(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Unpack(t, "h200x2")
	swappiness := filepath.Join(root, "proc/sys/vm/swappiness")
	before, err := os.ReadFile(swappiness)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n[profiles.default]\nvm_swappiness = 10\n"), 0o644)
	spool := filepath.Join(dir, "spool")
	args := []string{"--root", root, "--gpu-backend", "procfs", "--config", cfg, "--state-dir", spool}
	epilog := func(extra ...string) (int, string, string) {
		return mainRun("epilog", nil, append(append([]string{}, args...), extra...)...)
	}

	if code, out, stderr := epilog("--held"); code != 0 || !strings.Contains(out, "nothing holds settings") {
		t.Fatalf("--held on a fresh node: %d %q %q", code, out, stderr)
	}
	env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	code, out, _ := epilog("--held")
	if code != 1 || !strings.Contains(out, "7") || !strings.Contains(out, "alice") || !strings.Contains(out, "vm_swappiness@node") {
		t.Errorf("--held with job 7's settings applied: exit %d (want 1)\n%s", code, out)
	}

	// Job 7 is not over as far as the node can tell: no release without --force.
	code, out, stderr := epilog("--restore-all")
	if code != 1 || !strings.Contains(stderr, "job 7 (alice) still hold") || !strings.Contains(stderr, "--force") {
		t.Errorf("--restore-all under a live job: exit %d (want 1), stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(swappiness); strings.TrimSpace(string(b)) != "10" {
		t.Errorf("a refused --restore-all changed vm.swappiness to %q", b)
	}
	if code, _, _ := epilog("--held"); code != 1 {
		t.Errorf("a refused --restore-all let go of job 7's record: --held exit %d", code)
	}

	code, out, stderr = epilog("--restore-all", "--force")
	if code != 0 || !strings.Contains(out, "released job 7") || !strings.Contains(out, "vm_swappiness@node 10 -> "+strings.TrimSpace(string(before))) {
		t.Errorf("--restore-all --force: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(swappiness); strings.TrimSpace(string(b)) != strings.TrimSpace(string(before)) {
		t.Errorf("after --restore-all --force vm.swappiness reads %q, want its baseline %q", b, before)
	}
	if code, out, _ := epilog("--held"); code != 0 {
		t.Errorf("--held after --restore-all --force: exit %d\n%s", code, out)
	}
	// The job's epilog, when it comes, finds nothing to do.
	env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
	if code, _, stderr := mainRun("epilog", env, args...); code != 0 {
		t.Errorf("job 7's own epilog after --restore-all: %d %s", code, stderr)
	}
}

func TestNodeModeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--force"}, "--force goes with --restore-all"},
		{[]string{"--held", "--restore-all"}, "two modes"},
		{[]string{"--held", "--report"}, "do not go with --report"},
	} {
		code, _, stderr := mainRun("epilog", nil, append([]string{"--state-dir", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
