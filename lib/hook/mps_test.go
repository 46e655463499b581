package hook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
	"gpuprep/lib/mps"
	"gpuprep/lib/mps/mpsfake"
	"gpuprep/lib/plan"
)

const mpsConfig = `
[general]
dead_job_grace = "0s"
[profiles.default]
gpu_compute_mode = "exclusive_process"
mps = true
`

// mpsEnvT is a hook test node whose default profile asks for MPS, with a
// fake MPS control shared by every run and a short base directory (MPS
// socket paths must fit in 107 bytes).
type mpsEnvT struct {
	*env
	ctl  *mpsfake.Control
	base string
}

func newMPSEnv(t *testing.T) *mpsEnvT {
	t.Helper()
	return newMPSEnvOn(t, "dgxh100", "mock:dgxh100")
}

// newMPSEnvOn is newMPSEnv on fixture shape with GPU backend.
func newMPSEnvOn(t *testing.T, shape, backend string) *mpsEnvT {
	t.Helper()
	e := newEnv(t, shape, backend)
	cfg, err := config.Parse("mps.toml", []byte(mpsConfig))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	base, err := os.MkdirTemp("/tmp", "mps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	return &mpsEnvT{env: e, ctl: mpsfake.New(), base: base}
}

// run is a prolog (epilog false) or epilog of user's job on gpus.
func (m *mpsEnvT) run(epilog bool, job uint64, user string, uid int, gpus []int) *Outcome {
	m.t.Helper()
	o := m.jobOpts(job, user, uid, gpus)
	run, what := Prolog, "prolog"
	if epilog {
		run, what = Epilog, "epilog"
	}
	out, err := run(context.Background(), o)
	if err != nil {
		m.t.Fatalf("%s %d: %v", what, job, err)
	}
	return out
}

// jobOpts are the options of a hook of user's job on gpus, with m's MPS
// control and base.
func (m *mpsEnvT) jobOpts(job uint64, user string, uid int, gpus []int) *Options {
	o := m.opts(job, gpus, "")
	o.Job.User, o.Job.UID, o.Job.GID = user, uid, uid
	o.MPS = knob.MPSEnv{Base: m.base, Control: m.ctl}
	return o
}

// pipe is the pipe directory of user's daemon on GPU index i.
func (m *mpsEnvT) pipe(user string, i int) string {
	m.t.Helper()
	devs, err := m.gpu.Devices()
	if err != nil {
		m.t.Fatal(err)
	}
	key, _ := mps.Key([]string{devs[i].UUID})
	p, err := mps.Dirs(m.base, user, key)
	if err != nil {
		m.t.Fatal(err)
	}
	return p.Pipe
}

// A job that asks for MPS gets one daemon per GPU for its user; a second
// job of that user on the GPU shares it (no second daemon); a job of
// another user runs without MPS, is told why, and starts nothing; the
// last of the user's jobs to end quits the daemon and removes its
// directories, whatever the other user's job does.
func TestMPSJobsShareAndRelease(t *testing.T) {
	m := newMPSEnv(t)
	out := m.run(false, 12, "alice", 4242, []int{0, 1})
	want := []string{m.pipe("alice", 0), m.pipe("alice", 1)}
	slices.Sort(want)
	if got := m.ctl.Running(); !slices.Equal(got, want) {
		t.Fatalf("after job 12: daemons %v, want %v (changes %+v, skipped %+v)", got, want, out.Changes, out.Skipped)
	}
	if fi, err := os.Stat(m.pipe("alice", 0)); err != nil || !fi.IsDir() {
		t.Errorf("alice's pipe directory: %v", err)
	}

	m.run(false, 14, "alice", 4242, []int{0})
	if len(m.ctl.Started) != 2 {
		t.Errorf("alice's second job started daemons: %v", m.ctl.Started)
	}

	bob := m.run(false, 13, "bob", 4244, []int{1})
	if len(m.ctl.Started) != 2 {
		t.Errorf("bob's job started a daemon: %v", m.ctl.Started)
	}
	devs, _ := m.gpu.Devices()
	notice := "GPU " + devs[1].UUID + ": the MPS daemon serves alice (jobs [12]); job 13 (bob) runs without MPS: an MPS server serves one user at a time"
	if !slices.Contains(plan.Texts(bob.Warnings), notice) || !slices.Contains(bob.Notices, notice) {
		t.Errorf("bob's job: warnings %q, notices %q; want %q in both", bob.Warnings, bob.Notices, notice)
	}
	for _, h := range bob.Holds {
		if h.ID.Name == "mps" {
			t.Errorf("bob's job holds %+v: it must not keep alice's daemon running", h)
		}
	}

	// Job 12 ends: GPU 1's daemon goes (bob's job does not hold it),
	// GPU 0's stays for job 14.
	m.run(true, 12, "alice", 4242, nil)
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipe("alice", 0)}) {
		t.Errorf("after job 12's epilog: daemons %v, want GPU 0's only", got)
	}
	if _, err := os.Lstat(filepath.Dir(m.pipe("alice", 1))); !os.IsNotExist(err) {
		t.Errorf("GPU 1's daemon directory after its last job: %v; want removed", err)
	}
	m.run(true, 13, "bob", 4244, nil)
	m.run(true, 14, "alice", 4242, nil)
	if got := m.ctl.Running(); len(got) != 0 {
		t.Errorf("after every job: daemons %v", got)
	}
	if ents, _ := os.ReadDir(m.base); len(ents) != 0 {
		t.Errorf("%s after every job holds %v", m.base, ents)
	}
}

// A daemon that died under its job is drift (the epilog reads no user
// where the job held alice), recorded, and the epilog finishes.
func TestMPSDeadDaemonIsDrift(t *testing.T) {
	m := newMPSEnv(t)
	m.run(false, 21, "alice", 4242, []int{2})
	if !m.ctl.Kill(m.pipe("alice", 2)) {
		t.Fatal("no daemon to kill")
	}
	out := m.run(true, 21, "alice", 4242, nil)
	found := slices.IndexFunc(out.Drift, func(d DriftFound) bool {
		return d.ID.Name == "mps" && d.Expected == "alice" && d.Found == ""
	})
	if found < 0 {
		t.Fatalf("drift %+v; want mps expected alice, found \"\"", out.Drift)
	}
	recs, _, err := drift.Read(m.spool, time.Time{})
	if err != nil || !slices.ContainsFunc(recs, func(r drift.Record) bool { return r.Knob == "mps" && r.Job == "21" }) {
		t.Errorf("drift records %+v, %v; want job 21's mps", recs, err)
	}
	// What the dead daemon left (its directories, any orphan server) is
	// cleared by the next start on that GPU.
	m.run(false, 22, "bob", 4244, []int{2})
	if _, err := os.Lstat(filepath.Dir(m.pipe("alice", 2))); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's directory after the next start: %v; want removed", err)
	}
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipe("bob", 2)}) {
		t.Errorf("daemons %v; want bob's on GPU 2", got)
	}
}

// A dead job's release (its epilog never ran) quits its daemon as its
// epilog would.
func TestMPSDeadJobReleased(t *testing.T) {
	m := newMPSEnv(t)
	m.run(false, 31, "alice", 4242, []int{3})
	// Slurm's cgroup tree shows job 32 only: job 31 is over.
	os.MkdirAll(filepath.Join(m.root, "sys/fs/cgroup/system.slice/slurmstepd.scope/job_32/step_extern"), 0o755)
	out := m.run(false, 32, "bob", 4244, []int{4})
	if !released(out, "31") {
		t.Fatalf("job 31 not released: %+v", out.Released)
	}
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipe("bob", 4)}) {
		t.Errorf("daemons after job 31's release: %v; want bob's on GPU 4 only", got)
	}
}

// A GPU in compute mode prohibited cannot run an MPS server: the knob is
// skipped with the reason, which the job's user is told; nothing starts
// and the compute mode is left alone (the profile sets none here).
func TestMPSProhibitedSkipped(t *testing.T) {
	m := newMPSEnv(t)
	cfg, err := config.Parse("mps.toml", []byte("[profiles.default]\nmps = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.cfg = cfg
	if err := m.gpu.(gpu.Setter).SetComputeMode(5, gpu.ComputeProhibited); err != nil {
		t.Fatal(err)
	}
	out := m.run(false, 41, "alice", 4242, []int{5})
	if len(m.ctl.Started) != 0 {
		t.Errorf("started %v on a prohibited GPU", m.ctl.Started)
	}
	i := slices.IndexFunc(out.Skipped, func(s plan.Skip) bool { return s.ID.Name == "mps" })
	if i < 0 || !strings.Contains(out.Skipped[i].Reason, "compute mode is prohibited") {
		t.Fatalf("skipped %+v; want mps, saying the compute mode is prohibited", out.Skipped)
	}
	if !slices.ContainsFunc(out.Notices, func(n string) bool { return strings.Contains(n, "prohibited") }) {
		t.Errorf("notices %q; want the reason", out.Notices)
	}
	if s := m.settings(5); s.ComputeMode != gpu.ComputeProhibited {
		t.Errorf("compute mode changed to %s", s.ComputeMode)
	}
}

// A --gres=mps:N job (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in the prolog's
// environment, its GPU from CUDA_VISIBLE_DEVICES) gets its daemon though
// its profile does not set mps; a gres/gpu job with that profile gets none.
func TestMPSForGresMPSJob(t *testing.T) {
	m := newMPSEnv(t)
	cfg, err := config.Parse("plain.toml", []byte("[general]\ndead_job_grace = \"0s\"\n[profiles.default]\ngpu_compute_mode = \"exclusive_process\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.cfg = cfg
	m.run(false, 20, "alice", 4242, []int{2})
	if got := m.ctl.Running(); len(got) != 0 {
		t.Fatalf("a gres/gpu job started daemons %v", got)
	}
	o := m.opts(21, []int{3}, "")
	o.Job.User, o.Job.UID, o.Job.GID, o.Job.MPS, o.Job.MPSPercent = "alice", 4242, 4242, true, 25
	o.MPS = knob.MPSEnv{Base: m.base, Control: m.ctl}
	if _, err := Prolog(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := m.ctl.Running(); !slices.Equal(got, []string{m.pipe("alice", 3)}) {
		t.Errorf("the gres/mps job: daemons %v, want GPU 3's", got)
	}
	o.Job.MPS = false // the epilog needs no hint: the job record holds it
	if _, err := Epilog(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := m.ctl.Running(); len(got) != 0 {
		t.Errorf("after the epilog: daemons %v", got)
	}
}
