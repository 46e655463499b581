package hook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
	"gpuprep/lib/mps"
	"gpuprep/lib/plan"
)

// mpsMIGEnv is an MPS test node on mock:dgxa100, whose GPU 0 has two MIG
// devices (3g.20gb, 2g.10gb; MIG mode on in the mock, nothing real), given
// to Slurm as gres.conf MultipleFiles= records 0 and 1 (their GPU and
// cap files), the other GPUs whole after them. The daemons' directories
// are the root's run directory's (<root>/run/gpuprep/mps) when its paths
// fit MPS's socket limit, else a short base.
func mpsMIGEnv(t *testing.T) (*mpsEnvT, []gpu.MIGDevice) {
	t.Helper()
	m := newMPSEnvOn(t, "dgxa100", "mock:dgxa100")
	e := m.env
	all := testroot.GPUs(t, e.root)
	devs, err := e.gpu.Devices()
	if err != nil {
		t.Fatal(err)
	}
	migs := devs[0].MIG.Devices
	if len(migs) != 2 || migs[0].UUID == "" || migs[0].CICapMinor < 0 {
		t.Fatalf("mock:dgxa100 GPU 0's MIG devices: %+v", migs)
	}
	var b strings.Builder
	for _, md := range migs {
		fmt.Fprintf(&b, "Name=gpu MultipleFiles=/dev/nvidia%d,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d\n", devs[0].Minor, md.GICapMinor, md.CICapMinor)
	}
	for _, d := range all[1:] {
		fmt.Fprintf(&b, "Name=gpu File=/dev/nvidia%d\n", d.Minor)
	}
	writeGresConf(t, e.root, b.String())
	if runBase := filepath.Join(e.root, mps.DefaultBase); len(runBase)+len("/alice-0123456789ab/pipe") <= 80 {
		m.base = ""
	}
	return m, migs
}

// baseDir is where m's daemons' directories are.
func (m *mpsEnvT) baseDir() string {
	if m.base == "" {
		return filepath.Join(m.root, mps.DefaultBase)
	}
	return m.base
}

// migPipe is the pipe directory of user's daemon on MIG device uuid.
func (m *mpsEnvT) migPipe(user, uuid string) string {
	m.t.Helper()
	key, _ := mps.Key([]string{uuid})
	p, err := mps.Dirs(m.baseDir(), user, key)
	if err != nil {
		m.t.Fatal(err)
	}
	return p.Pipe
}

// Issue 36 §4: a job on two MIG devices gets a daemon on each, started
// with CUDA_VISIBLE_DEVICES=<MIG UUID> and directories keyed by it; a
// second job of the user on one of them shares it; another user's job
// there runs without MPS and holds nothing; the GPU's own settings stay
// untouched; the epilogs stop every daemon and leave no directory.
func TestMPSOnMIGDevices(t *testing.T) {
	m, migs := mpsMIGEnv(t)
	a, b := migs[0].UUID, migs[1].UUID
	gpu0 := m.settings(0)
	out := m.run(false, 12, "alice", 4242, []int{0, 1})
	want := []string{m.migPipe("alice", a), m.migPipe("alice", b)}
	slices.Sort(want)
	if got := m.ctl.Running(); !slices.Equal(got, want) {
		t.Fatalf("after job 12: daemons %v, want %v (changes %+v, skipped %+v, warnings %q)", got, want, out.Changes, out.Skipped, plan.Texts(out.Warnings))
	}
	for _, u := range []string{a, b} {
		d, ok := m.ctl.Daemon(m.migPipe("alice", u))
		if !ok || !slices.Equal(d.UUIDs, []string{u}) {
			t.Errorf("daemon of %s: %+v %v; want CUDA_VISIBLE_DEVICES=%s", u, d, ok, u)
		}
		if !slices.ContainsFunc(out.Holds, func(h plan.Hold) bool { return h.ID == knob.ID{Name: "mps", Scope: knob.GPUScope(u)} }) {
			t.Errorf("job 12 holds %+v; want mps@%s", out.Holds, knob.GPUScope(u))
		}
	}
	for _, ch := range out.Changes {
		if ch.ID.Name != "mps" && strings.HasPrefix(ch.ID.Scope, "gpu:") {
			t.Errorf("a MIG device job changed GPU knob %s", ch.ID)
		}
	}
	m.run(false, 14, "alice", 4242, []int{0})
	if len(m.ctl.Started) != 2 {
		t.Errorf("alice's second job started daemons: %v", m.ctl.Started)
	}
	bob := m.run(false, 13, "bob", 4244, []int{1})
	if len(m.ctl.Started) != 2 {
		t.Errorf("bob's job started a daemon: %v", m.ctl.Started)
	}
	notice := "MIG device " + b + ": the MPS daemon serves alice (jobs [12]); job 13 (bob) runs without MPS: an MPS server serves one user at a time"
	if !slices.Contains(plan.Texts(bob.Warnings), notice) || !slices.Contains(bob.Notices, notice) {
		t.Errorf("bob's job: warnings %q, notices %q; want %q in both", plan.Texts(bob.Warnings), bob.Notices, notice)
	}
	if i := slices.IndexFunc(bob.Holds, func(h plan.Hold) bool { return h.ID.Name == "mps" }); i >= 0 {
		t.Errorf("bob's job holds %+v", bob.Holds[i])
	}
	m.run(true, 12, "alice", 4242, nil)
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.migPipe("alice", a)}) {
		t.Errorf("after job 12's epilog: daemons %v, want %s's only", got, a)
	}
	m.run(true, 13, "bob", 4244, nil)
	m.run(true, 14, "alice", 4242, nil)
	if got := m.ctl.Running(); len(got) != 0 {
		t.Errorf("after every job: daemons %v", got)
	}
	if ents, _ := os.ReadDir(m.baseDir()); len(ents) != 0 {
		t.Errorf("%s after every job holds %v", m.baseDir(), ents)
	}
	if s := m.settings(0); !reflect.DeepEqual(s, gpu0) {
		t.Errorf("GPU 0's settings changed: %+v, want %+v", s, gpu0)
	}
}

// A dead MIG job's release (its epilog never ran) stops its daemon and
// removes its directories, as its epilog would.
func TestMPSOnMIGDeadJobReleased(t *testing.T) {
	m, migs := mpsMIGEnv(t)
	m.run(false, 31, "alice", 4242, []int{1})
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.migPipe("alice", migs[1].UUID)}) {
		t.Fatalf("daemons %v", got)
	}
	os.MkdirAll(filepath.Join(m.root, "sys/fs/cgroup/system.slice/slurmstepd.scope/job_32/step_extern"), 0o755)
	out := m.run(false, 32, "bob", 4244, []int{3})
	if !released(out, "31") {
		t.Fatalf("job 31 not released: %+v", out.Released)
	}
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipeOf("bob", 3)}) {
		t.Errorf("daemons after job 31's release: %v; want bob's on Slurm GPU 3 only", got)
	}
	if _, err := os.Lstat(filepath.Dir(m.migPipe("alice", migs[1].UUID))); !os.IsNotExist(err) {
		t.Errorf("the released daemon's directory: %v; want removed", err)
	}
}

// pipeOf is the pipe directory of user's daemon on the whole GPU that is
// Slurm's index i in mpsMIGEnv's gres.conf (i >= 2: GPU list order from 1).
func (m *mpsEnvT) pipeOf(user string, i int) string {
	m.t.Helper()
	all := testroot.GPUs(m.t, m.root)
	devs, _ := m.gpu.Devices()
	k := slices.IndexFunc(devs, func(d gpu.Device) bool { return d.Minor == all[i-1].Minor })
	return m.migPipe(user, devs[k].UUID)
}

// A MIG device's daemon that died under its job is drift; an epilog
// killed after its journal (before any restore) is rolled forward by the
// next hook, which stops the other MIG device's daemon and removes its
// directories; what the dead one left goes at the next start there.
func TestMPSOnMIGDriftAndKilledEpilog(t *testing.T) {
	m, migs := mpsMIGEnv(t)
	a, b := migs[0].UUID, migs[1].UUID
	m.run(false, 21, "alice", 4242, []int{0, 1})
	if !m.ctl.Kill(m.migPipe("alice", a)) {
		t.Fatal("no daemon to kill")
	}
	// The epilog is killed right after writing its journal.
	o := m.jobOpts(21, "alice", 4242, nil)
	o.DryRun = true
	out, err := Epilog(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out.Drift, func(d DriftFound) bool {
		return d.ID == knob.ID{Name: "mps", Scope: knob.GPUScope(a)} && d.Expected == "alice" && d.Found == ""
	}) {
		t.Errorf("drift %+v; want mps@%s expected alice, found \"\"", out.Drift, knob.GPUScope(a))
	}
	var node NodeFile
	m.spool.ReadJSON(nodeFile, &node)
	recs, _ := readJobRecords(m.spool)
	r := recs[out.Job]
	j := &Journal{Op: opRelease, Job: out.Job, Started: time.Now(), Changes: out.Changes, NodeBefore: node, NodeAfter: node, JobBefore: r,
		Drift: driftRecords(newRun(o), r, out.Drift)}
	if err := writeJournal(m.spool, j); err != nil {
		t.Fatal(err)
	}
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.migPipe("alice", b)}) {
		t.Fatalf("daemons before the next hook: %v", got)
	}
	m.run(false, 22, "bob", 4244, []int{3})
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipeOf("bob", 3)}) {
		t.Errorf("daemons after the killed epilog was rolled forward: %v; want bob's on Slurm GPU 3 only", got)
	}
	if _, err := os.Lstat(filepath.Dir(m.migPipe("alice", b))); !os.IsNotExist(err) {
		t.Errorf("%s's daemon directory: %v; want removed", b, err)
	}
	// What the dead daemon left is cleared by the next start on its MIG
	// device, as on a whole GPU.
	m.run(false, 23, "bob", 4244, []int{0})
	if _, err := os.Lstat(filepath.Dir(m.migPipe("alice", a))); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's directory after the next start: %v; want removed", err)
	}
	if got := m.ctl.Running(); len(got) != 2 || !slices.Contains(got, m.migPipe("bob", a)) {
		t.Errorf("daemons %v; want bob's on %s and Slurm GPU 3", got, a)
	}
	m.run(true, 23, "bob", 4244, nil)
	m.run(true, 22, "bob", 4244, nil)
	if ents, _ := os.ReadDir(m.baseDir()); len(ents) != 0 {
		t.Errorf("%s after every job holds %v", m.baseDir(), ents)
	}
}

// jobMIGs names a MIG record's device by its two cap files, on the GPU of
// its /dev/nvidia<N>; a record whose caps name no MIG device, or a MIG
// device without a UUID (the procfs backend), is an error; whole GPUs
// and repeats add nothing.
func TestJobMIGs(t *testing.T) {
	all := []gpu.Device{{Index: 0, Minor: 1, UUID: "GPU-a", MIG: gpu.MIGState{Current: true, Devices: []gpu.MIGDevice{
		{GI: 1, UUID: "MIG-1", GICapMinor: 147, CICapMinor: 148}, {GI: 5, UUID: "MIG-5", GICapMinor: 183, CICapMinor: 184}}}},
		{Index: 1, Minor: 0, UUID: "GPU-b", MIG: gpu.MIGState{Current: true, Devices: []gpu.MIGDevice{{GI: 1, GICapMinor: 12, CICapMinor: 13}}}}}
	if got := capMinors([]string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap184", "/dev/nvidia-caps/nvidia-cap183", "/dev/nvidia-caps/nvidia-capx"}); !slices.Equal(got, []int{184, 183}) {
		t.Errorf("capMinors: %v", got)
	}
	devs := []gresDevice{{Minor: 1, MIG: true, Caps: []int{184, 183}}, {Minor: 1, MIG: true, Caps: []int{147, 148}}, {Minor: 0}, {Minor: 1, MIG: true, Caps: []int{147, 184}}, {Minor: 0, MIG: true, Caps: []int{12, 13}}}
	if got, err := jobMIGs(all, []int{0, 2, 1, 0}, devs); err != nil || !slices.Equal(got, []string{"MIG-5", "MIG-1"}) {
		t.Errorf("jobMIGs: %v %v; want MIG-5, MIG-1", got, err)
	}
	if _, err := jobMIGs(all, []int{3}, devs); err == nil || !strings.Contains(err.Error(), "no MIG device of GPU 0 has the cap files 147,184") {
		t.Errorf("mixed caps: %v", err)
	}
	if _, err := jobMIGs(all, []int{4}, devs); err == nil || !strings.Contains(err.Error(), "gives GPU 1's MIG devices no UUIDs") {
		t.Errorf("no UUID: %v", err)
	}
}

// A MIG job whose gres.conf records name no MIG device the backend lists
// (cap files of another layout) runs without MPS, told why, and the
// prolog succeeds.
func TestMPSOnMIGUnknownDevices(t *testing.T) {
	m, _ := mpsMIGEnv(t)
	writeGresConf(t, m.root, "Name=gpu MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap100,/dev/nvidia-caps/nvidia-cap101\n")
	out := m.run(false, 51, "alice", 4242, []int{0})
	if len(m.ctl.Started) != 0 {
		t.Errorf("started %v", m.ctl.Started)
	}
	want := "MPS skipped on the job's MIG devices: cannot tell which they are: MIG device 0: no MIG device of GPU 0 has the cap files 100,101 of its gres.conf record"
	if !slices.Contains(plan.Texts(out.Warnings), want) {
		t.Errorf("warnings %q; want %q", plan.Texts(out.Warnings), want)
	}
}
