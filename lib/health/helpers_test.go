package health

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
	"gpuprep/lib/state"
)

// node is a simulated DGX H100 for the health checks: the shared fixture
// root, read through symlinks from a writable folder that stands for "/"
// (so a test adds /dev/kmsg, /proc/swaps, /proc/<pid>/cgroup, the boot id
// without touching the shared copy), the mock NVML over it, and a spool.
type node struct {
	t     testing.TB
	dir   string
	root  host.Root
	b     *nvmlgpu.NVML
	spool *state.Spool
	cfg   config.HealthSection
}

const bootA = "11111111-2222-3333-4444-555555555555"

func newNode(t testing.TB) *node {
	t.Helper()
	shared := testroot.Shared(t, "dgxh100")
	dir := t.TempDir()
	must(t, os.Symlink(filepath.Join(shared, "sys"), filepath.Join(dir, "sys")))
	ents, err := os.ReadDir(filepath.Join(shared, "proc"))
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(dir, "proc"), 0o755))
	for _, e := range ents {
		if e.Name() != "sys" {
			must(t, os.Symlink(filepath.Join(shared, "proc", e.Name()), filepath.Join(dir, "proc", e.Name())))
		}
	}
	n := &node{t: t, dir: dir, root: host.NewRoot(dir), cfg: config.Default().Health}
	n.write("/proc/sys/kernel/random/boot_id", bootA+"\n")
	n.write("/dev/kmsg", "6,0,0,-;Linux version 6.1.0\n")
	n.b, err = gpumock.Open("dgxh100", n.root)
	must(t, err)
	sp, err := state.Open(filepath.Join(dir, "spool"))
	must(t, err)
	n.spool = sp
	t.Cleanup(func() { sp.Close() })
	return n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (n *node) write(p, content string) {
	n.t.Helper()
	full := n.root.Path(p)
	must(n.t, os.MkdirAll(filepath.Dir(full), 0o755))
	must(n.t, os.WriteFile(full, []byte(content), 0o644))
}

func (n *node) appendKmsg(lines ...string) {
	n.t.Helper()
	f, err := os.OpenFile(n.root.Path(KmsgPath), os.O_APPEND|os.O_WRONLY, 0)
	must(n.t, err)
	defer f.Close()
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	must(n.t, err)
}

// dev is mock GPU i's server device, for injecting faults.
func (n *node) dev(i int) *server.Device {
	return n.b.Interface().(*server.Server).Devices[i].(*server.Device)
}

func (n *node) run(op string, readOnly bool) *Report {
	n.t.Helper()
	rep, err := Run(context.Background(), Options{Op: op, Root: n.root, GPU: n.b, Health: n.cfg, Spool: n.spool, ReadOnly: readOnly, JobID: "42"})
	must(n.t, err)
	return rep
}

// find is the results of check (on scope, when not "").
func find(rep *Report, check, scope string) []Result {
	var out []Result
	for _, r := range rep.Results {
		if r.Check == check && (scope == "" || r.Scope == scope) {
			out = append(out, r)
		}
	}
	return out
}

func one(t testing.TB, rep *Report, check, scope string) Result {
	t.Helper()
	rs := find(rep, check, scope)
	if len(rs) != 1 {
		t.Fatalf("%s %s: %d results: %+v", check, scope, len(rs), rep.Results)
	}
	return rs[0]
}
