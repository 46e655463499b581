package hook

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// While a job holds settings, a /run/gpuprep that another user took over
// is not moved aside (that would orphan the job's state kept there: the
// IRQ list, MPS directories, units' marks): the prolog, its dry run and
// the epilog fail as a node problem saying why, and nothing is moved or
// changed. Given back to root, the epilog runs.
func TestUntrustedRunDirWhileJobsHold(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	e.write(host.BootIDPath, testBoot+"\n")
	e.prolog(1, []int{0}, "")
	dir := host.NewRoot(e.root).Path("/run/gpuprep")
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	base := e.snap()
	want := "run directory: refusing " + dir + ": owned by uid 65534, not by the writer (uid 0); not moved aside: settings are held by job 1, "
	dry := e.opts(2, []int{1}, "")
	dry.DryRun = true
	for name, run := range map[string]func() (*Outcome, error){
		"prolog":  func() (*Outcome, error) { return Prolog(context.Background(), e.opts(2, []int{1}, "")) },
		"dry run": func() (*Outcome, error) { return Prolog(context.Background(), dry) },
		"epilog":  func() (*Outcome, error) { return Epilog(context.Background(), e.opts(1, nil, "")) },
	} {
		if _, err := run(); err == nil || !IsNodeError(err) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v\nwant a node error %s...", name, err, want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("%s was moved or changed: %v", dir, err)
	}
	if d := e.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("a refused run changed the node: %v", d)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	e.epilog(1)
}
