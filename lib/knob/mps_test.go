package knob

import (
	"errors"
	"gpuprep/lib/plan"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/mps"
	"gpuprep/lib/mps/mpsfake"
)

// mpsTestEnv is a catalog Env for alice's job on the mock's first GPU,
// with a fake MPS control and a short base directory (MPS socket paths
// must fit in 107 bytes).
func mpsTestEnv(t *testing.T) (Env, *mpsfake.Control, gpu.Backend, []gpu.Device) {
	t.Helper()
	b, devs := mockGPUs(t)
	base, err := os.MkdirTemp("/tmp", "mps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ctl := mpsfake.New()
	return Env{Root: knobRoot(t, "dgxh100"), GPU: b, GPUs: devs[:1], User: "alice", UID: 4242, GID: 4243,
		MPS: MPSEnv{Base: base, Control: ctl}}, ctl, b, devs
}

func mpsOf(t *testing.T, env Env) Knob {
	t.Helper()
	ks := ByName(Catalog(env), "mps")
	if len(ks) != 1 {
		t.Fatalf("%d mps knobs", len(ks))
	}
	return ks[0]
}

// TestMPSStartShareStop: "on" (mps = true) is the job's user; Apply starts one
// daemon for the GPU with its directories (the pipe directory handed to
// the user), applying it again starts none, and Apply("") quits it and
// removes its directories.
func TestMPSStartShareStop(t *testing.T) {
	env, ctl, _, devs := mpsTestEnv(t)
	k := mpsOf(t, env)
	if v, err := k.Read(); v != "" || err != nil {
		t.Fatalf("Read before = %q, %v", v, err)
	}
	v, err := k.Desired("on")
	if v != "alice" || err != nil {
		t.Fatalf("Desired(true) = %q, %v", v, err)
	}
	if _, err := k.Desired("off"); !errors.Is(err, ErrLeaveAlone) {
		t.Errorf("Desired(false): %v; want leave alone", err)
	}
	if err := k.Apply("alice"); err != nil {
		t.Fatal(err)
	}
	key, _ := mps.Key([]string{devs[0].UUID})
	p, _ := mps.Dirs(env.MPS.Base, "alice", key)
	if got := ctl.Running(); !slices.Equal(got, []string{p.Pipe}) {
		t.Fatalf("daemons running %v, want %s", got, p.Pipe)
	}
	if d, _ := ctl.Daemon(p.Pipe); !slices.Equal(d.UUIDs, []string{devs[0].UUID}) || d.UID != 4242 {
		t.Errorf("daemon %+v: want GPU %s for uid 4242", d, devs[0].UUID)
	}
	if fi, err := os.Stat(p.Pipe); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() || fi.Mode().Perm() != 0o710 {
		t.Errorf("pipe directory %s: %v, %v (want this process's, 0710: uid 4242 may search it through its ACL)", p.Pipe, fi.Mode(), err)
	}
	if v, err := k.Read(); v != "alice" || err != nil {
		t.Errorf("Read = %q, %v; want alice", v, err)
	}
	// A second job of alice's: the same value, no second daemon.
	if err := mpsOf(t, env).Apply("alice"); err != nil || len(ctl.Started) != 1 {
		t.Errorf("Apply again: %v, %d starts; want 1", err, len(ctl.Started))
	}
	if err := k.Apply(""); err != nil {
		t.Fatal(err)
	}
	if len(ctl.Running()) != 0 || !slices.Equal(ctl.Quitted, []string{p.Pipe}) || !slices.Equal(ctl.Ended, []string{p.Pipe}) {
		t.Errorf("after Apply(\"\"): running %v, quit %v, done %v", ctl.Running(), ctl.Quitted, ctl.Ended)
	}
	if _, err := os.Lstat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Apply(\"\"): %v; want removed", p.Dir, err)
	}
	if v, err := k.Read(); v != "" || err != nil {
		t.Errorf("Read after = %q, %v", v, err)
	}
}

// TestMPSDeadDaemonReadsNone: a daemon that died reads "" (drift where a
// job holds its user), and Apply starts a new one over what it left.
func TestMPSDeadDaemonReadsNone(t *testing.T) {
	env, ctl, _, _ := mpsTestEnv(t)
	k := mpsOf(t, env)
	if err := k.Apply("alice"); err != nil {
		t.Fatal(err)
	}
	pipe := ctl.Running()[0]
	ctl.Kill(pipe)
	if v, err := k.Read(); v != "" || err != nil {
		t.Errorf("Read with the daemon dead = %q, %v; want \"\"", v, err)
	}
	if err := k.Apply("alice"); err != nil || len(ctl.Started) != 2 {
		t.Errorf("Apply after the death: %v, %d starts", err, len(ctl.Started))
	}
}

// TestMPSOtherUser: Apply for another user stops the first one's daemon
// (a GPU's daemon serves one user) and removes its directories.
func TestMPSOtherUser(t *testing.T) {
	env, ctl, _, _ := mpsTestEnv(t)
	if err := mpsOf(t, env).Apply("alice"); err != nil {
		t.Fatal(err)
	}
	alice := ctl.Running()[0]
	env.User, env.UID, env.GID = "bob", 4244, 4245
	k := mpsOf(t, env)
	if err := k.Apply("bob"); err != nil {
		t.Fatal(err)
	}
	if got := ctl.Running(); len(got) != 1 || !strings.Contains(got[0], "/bob-") {
		t.Errorf("running %v; want bob's only", got)
	}
	if _, err := os.Lstat(alice); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("alice's pipe directory %s: %v; want removed", alice, err)
	}
	d, _ := Lookup("mps")
	if d.GoWithout == nil {
		t.Fatal("mps: a job of another user does not go without it")
	}
	if msg := d.GoWithout(plan.Conflict{ID: k.ID(), Job: "13", Wants: "bob", Held: "alice", Others: []string{"12"}}); !strings.Contains(msg, "the MPS daemon serves alice (jobs [12]); job 13 (bob) runs without MPS") {
		t.Errorf("GoWithout = %q", msg)
	}
}

// TestMPSProhibitedRefused: a GPU in compute mode prohibited forbids the
// MPS server's context: Desired and Apply refuse, saying so, and nothing
// starts (the compute mode is left as it is).
func TestMPSProhibitedRefused(t *testing.T) {
	env, ctl, b, _ := mpsTestEnv(t)
	if err := b.(gpu.Setter).SetComputeMode(env.GPUs[0].Index, gpu.ComputeProhibited); err != nil {
		t.Fatal(err)
	}
	k := mpsOf(t, env)
	if _, err := k.Desired("on"); err == nil || !strings.Contains(err.Error(), "compute mode is prohibited") {
		t.Errorf("Desired(true) on a prohibited GPU: %v", err)
	}
	if err := k.Apply("alice"); err == nil || !strings.Contains(err.Error(), "prohibited") {
		t.Errorf("Apply on a prohibited GPU: %v", err)
	}
	if len(ctl.Started) != 0 {
		t.Errorf("started %v on a prohibited GPU", ctl.Started)
	}
	s, _ := b.(gpu.SettingsReader).Settings(env.GPUs[0].Index, gpu.FieldComputeMode)
	if s.ComputeMode != gpu.ComputeProhibited {
		t.Errorf("compute mode changed to %s", s.ComputeMode)
	}
}

// TestMPSNoUser: with no job or no user, Desired checks the GPU only and
// Apply refuses, naming SLURM_JOB_USER.
func TestMPSNoUser(t *testing.T) {
	env, ctl, b, devs := mpsTestEnv(t)
	env.User = ""
	k := mpsOf(t, env)
	if v, err := k.Desired("on"); v != Unknown || err != nil {
		t.Errorf("Desired without a user = %q, %v", v, err)
	}
	if err := k.Apply(Unknown); err == nil || !strings.Contains(err.Error(), "SLURM_JOB_USER") {
		t.Errorf("Apply(Unknown): %v", err)
	}
	for _, k := range GPUKnobs(b, devs[0]) {
		if k.ID().Name == "mps" {
			if v, err := k.Desired("on"); v != Unknown || err != nil {
				t.Errorf("GPUKnobs' mps Desired = %q, %v", v, err)
			}
		}
	}
	if len(ctl.Started) != 0 {
		t.Errorf("started %v", ctl.Started)
	}
}
