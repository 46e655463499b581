package oracleroot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVersions logs the version of each oracle tool, so a test log says
// which hwloc and Slurm gpuprep was held against (go test -v). A missing
// tool fails the test under CI=true, and always when GPUPREP_ORACLE_ROOT
// is set (a root without the tools is a broken root, not a lighter setup);
// otherwise it skips.
func TestVersions(t *testing.T) {
	t.Logf("oracle tools from %s", Describe())
	for _, tool := range Tools {
		v, err := Version(tool)
		if err != nil {
			if os.Getenv("CI") == "true" || Root() != "" {
				t.Errorf("%v", err)
				continue
			}
			t.Skip(err)
		}
		t.Logf("%s: %s", tool.Name, v)
	}
}

// TestFixtureVisible runs a tool of the root (or of this machine) on a
// fixture root through HWLOC_FSROOT and in a working directory: it sees
// the fixture's files (read-only in a root) and can write in its working
// directory, whose path in Args is Work's.
func TestFixtureVisible(t *testing.T) {
	if _, err := LookPath("sh"); err != nil {
		t.Skip(err)
	}
	fs, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(fs, "cpu"), []byte("fixture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := Command(ctx, Spec{Tool: "sh", Dir: work,
		Args: []string{"-c", `cat "$HWLOC_FSROOT/cpu" && echo out >"$1/out" && pwd &&
			if touch "$HWLOC_FSROOT/x" 2>/dev/null; then echo rw; else echo ro; fi`, "sh", Work(work)},
		Env: []string{"HWLOC_FSROOT=" + fs, "PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != "fixture" || lines[1] != Work(work) {
		t.Fatalf("output %q, want fixture and %s", out, Work(work))
	}
	// In a root the fixture is bound read-only; here root may write it.
	if Root() != "" && lines[2] != "ro" {
		t.Errorf("the fixture root is writable in %s", Root())
	}
	if b, err := os.ReadFile(filepath.Join(work, "out")); err != nil || string(b) != "out\n" {
		t.Errorf("work dir file: %q, %v", b, err)
	}
}

// TestCommandHost: with the variable unset, a command is the tool itself.
func TestCommandHost(t *testing.T) {
	t.Setenv(Var, "")
	cmd, err := Command(context.Background(), Spec{Tool: "/bin/true", Args: []string{"a"}, Env: []string{"X=1"}, Dir: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != "/bin/true" || strings.Join(cmd.Args, " ") != "/bin/true a" || cmd.Dir != "/tmp" || len(cmd.Env) != 1 {
		t.Errorf("command %v in %s env %v", cmd.Args, cmd.Dir, cmd.Env)
	}
	if Work("/tmp/x") != "/tmp/x" {
		t.Errorf("Work changes a path on this machine")
	}
}

// TestMissingRoot: a variable naming no folder is a one-line error naming it.
func TestMissingRoot(t *testing.T) {
	t.Setenv(Var, filepath.Join(t.TempDir(), "none"))
	if _, err := Command(context.Background(), Spec{Tool: "/bin/true"}); err == nil || !strings.Contains(err.Error(), Var) {
		t.Errorf("error %v, want one naming %s", err, Var)
	}
	if _, err := LookPath("slurmd"); err == nil || !strings.Contains(err.Error(), Var) {
		t.Errorf("LookPath error %v, want one naming %s", err, Var)
	}
}
