package hookcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// The dry-run table's first line names the profile and where it came from
// once ("profile default (selection.default_profile)", never "profile
// default (default)"); an empty knob value (no idle state disabled) shows
// as "(none)", in the table and in the log line, never as "state3->" with
// nothing after it.
func TestPlanTableWording(t *testing.T) {
	root := testroot.Unpack(t, "dgxh100")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"), 0o644)
	spool := filepath.Join(dir, "spool")
	base := []string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", spool}
	env := map[string]string{"SLURM_JOB_USER": "alice"}
	run := func(op string, args ...string) (string, string) {
		t.Helper()
		code, out, stderr := mainRun(op, env, append(append([]string{}, base...), args...)...)
		if code != 0 {
			t.Fatalf("%s %v: exit %d\n%s", op, args, code, stderr)
		}
		return out, stderr
	}
	firstLine := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

	out, _ := run("prolog", "--job-id", "5", "--dry-run")
	if got, want := firstLine(out), "prolog for job 5, profile default (selection.default_profile); dry run: nothing changed"; got != want {
		t.Errorf("default profile: %q, want %q", got, want)
	}
	out, _ = run("prolog", "--job-id", "6", "--dry-run", "--constraints", "gpuprep_benchmark")
	if got, want := firstLine(out), "prolog for job 6, profile benchmark (the job's constraints); dry run: nothing changed"; got != want {
		t.Errorf("profile from the constraints: %q, want %q", got, want)
	}
	_, stderr := run("prolog", "--job-id", "6", "--constraints", "gpuprep_benchmark")
	if !strings.Contains(stderr, "cstate_max_latency_us@node (none)->state3") {
		t.Errorf("prolog log lacks (none)->state3:\n%s", stderr)
	}
	out, stderr = run("epilog", "--job-id", "6", "--dry-run")
	if got, want := firstLine(out), "epilog for job 6, profile benchmark; dry run: nothing changed"; got != want {
		t.Errorf("epilog: %q, want %q", got, want)
	}
	if !regexp.MustCompile(`(?m)^cstate_max_latency_us\s+node\s+state3\s+\(none\)\s+restore`).MatchString(out) {
		t.Errorf("epilog table lacks state3 -> (none):\n%s", out)
	}
	if !strings.Contains(stderr, "cstate_max_latency_us@node state3->(none)") || regexp.MustCompile(`->[,"]`).MatchString(stderr) {
		t.Errorf("epilog log line, want state3->(none) and no -> with nothing after it:\n%s", stderr)
	}
	out, _ = run("epilog", "--job-id", "9", "--dry-run")
	if got, want := firstLine(out), "epilog for job 9, no profile; dry run: nothing changed"; got != want {
		t.Errorf("epilog without a prolog record: %q, want %q", got, want)
	}
}
