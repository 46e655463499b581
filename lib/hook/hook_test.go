package hook

import (
	"context"
	"gpuprep/lib/plan"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/knobsnap"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

const testConfig = `
[profiles.default]
cpu_governor = "performance"
thp_enabled = "never"
vm_swappiness = 10
kernel_numa_balancing = 0
gpu_persistence = true
gpu_compute_mode = "exclusive_process"
[profiles.default.invariants]
gpu_persistence = true
[profiles.quiet]
inherits = "default"
thp_enabled = "always"
[profiles.strict]
inherits = "default"
required = ["cpu_governor"]
`

type env struct {
	t     *testing.T
	root  string
	cfg   *config.Config
	gpu   gpu.Backend
	spool *state.Spool
}

func newEnv(t *testing.T, shape, backend string) *env {
	t.Helper()
	root := testroot.Unpack(t, shape)
	cfg, err := config.Parse("test.toml", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.Open(backend, host.NewRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	writeGresConf(t, root, "")
	sp, err := state.Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return &env{t: t, root: root, cfg: cfg, gpu: b, spool: sp}
}

func (e *env) opts(job uint64, gpus []int, comment string) *Options {
	return &Options{Root: host.NewRoot(e.root), Config: e.cfg, GPU: e.gpu, Spool: e.spool, Node: "n1",
		Job: slurm.Job{ID: job, User: "alice", GPUs: gpus, Comment: comment}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (e *env) prolog(job uint64, gpus []int, comment string) *Outcome {
	e.t.Helper()
	out, err := Prolog(context.Background(), e.opts(job, gpus, comment))
	if err != nil {
		e.t.Fatalf("prolog %d: %v", job, err)
	}
	return out
}

func (e *env) epilog(job uint64) *Outcome {
	e.t.Helper()
	out, err := Epilog(context.Background(), e.opts(job, nil, ""))
	if err != nil {
		e.t.Fatalf("epilog %d: %v", job, err)
	}
	return out
}

func (e *env) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(e.root, rel))
	return strings.TrimSpace(string(b))
}

func (e *env) snap() knobsnap.Snapshot {
	s, err := knobsnap.Take(e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func TestJobLifecycle(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	base := e.snap()
	before := e.settings(1)

	out := e.prolog(1, []int{0, 1}, "")
	if len(out.Changes) == 0 {
		t.Fatal("prolog changed nothing")
	}
	for _, f := range []string{"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "sys/devices/system/cpu/cpu223/cpufreq/scaling_governor"} {
		if got := e.read(f); got != "performance" {
			t.Errorf("%s = %q", f, got)
		}
	}
	if got := e.read("sys/kernel/mm/transparent_hugepage/enabled"); !strings.Contains(got, "[never]") {
		t.Errorf("THP %q", got)
	}
	if got := e.read("proc/sys/vm/swappiness"); got != "10" {
		t.Errorf("swappiness %q", got)
	}
	if s := e.settings(1); s.ComputeMode != gpu.ComputeExclusiveProcess {
		t.Errorf("GPU 1 compute mode %s", s.ComputeMode)
	}
	if s := e.settings(2); s.ComputeMode != gpu.ComputeDefault {
		t.Errorf("GPU 2 (not the job's) changed: %s", s.ComputeMode)
	}
	// Running the prolog twice changes nothing the second time.
	if again := e.prolog(1, []int{0, 1}, ""); len(again.Changes) != 0 {
		t.Errorf("second prolog changed %v", again.Changes)
	}

	ep := e.epilog(1)
	if len(ep.Drift) != 0 {
		t.Errorf("drift without changes: %+v", ep.Drift)
	}
	if d := e.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("node not at baseline after the epilog: %v", d)
	}
	if s := e.settings(1); s.Persistence != before.Persistence || s.ComputeMode != before.ComputeMode || s.AppClockSMMHz != before.AppClockSMMHz || s.PowerLimitMW != before.PowerLimitMW {
		t.Errorf("GPU 1 settings %+v, want %+v", s, before)
	}
	if found, _ := e.spool.ReadJSON(jobFile("1"), &JobRecord{}); found {
		t.Error("job record left behind")
	}
	// The epilog is idempotent.
	if again := e.epilog(1); len(again.Changes) != 0 {
		t.Errorf("second epilog changed %v", again.Changes)
	}
}

func TestDriftRecorded(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	base := e.snap()
	e.prolog(7, []int{3}, "")
	// The job (or someone on the node) changes a knob mid-run.
	os.WriteFile(filepath.Join(e.root, "proc/sys/vm/swappiness"), []byte("60\n"), 0o644)
	e.gpu.(gpu.Setter).SetPersistence(3, false)
	ep := e.epilog(7)
	kinds := map[string]string{}
	for _, d := range ep.Drift {
		kinds[d.ID.Name+"/"+d.Kind] = string(d.Found)
	}
	if kinds["vm_swappiness/drift"] != "60" || kinds["gpu_persistence/drift"] != "off" || kinds["gpu_persistence/invariant"] != "off" {
		t.Fatalf("drift %+v", ep.Drift)
	}
	recs, _, err := drift.Read(e.spool, time.Time{})
	if err != nil || len(recs) != 3 {
		t.Fatalf("drift records %+v, %v", recs, err)
	}
	r := recs[0]
	if r.Job != "7" || r.User != "alice" || r.Node != "n1" || r.Time.IsZero() {
		t.Errorf("record %+v", r)
	}
	if d := e.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("node not at baseline after drift: %v", d)
	}
}

func TestSharedNodeRestoresWhenLastJobLeaves(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	base := e.snap()
	e.prolog(1, []int{0}, "")
	out := e.prolog(2, []int{1}, "gpuprep=quiet") // asks for THP always: conflict
	if len(out.Warnings) == 0 || !strings.Contains(strings.Join(plan.Texts(out.Warnings), " "), "thp_enabled") {
		t.Errorf("conflict warning missing: %v", out.Warnings)
	}
	if got := e.read("sys/kernel/mm/transparent_hugepage/enabled"); !strings.Contains(got, "[never]") {
		t.Errorf("second job changed a shared knob: %q", got)
	}
	e.epilog(1)
	if got := e.read("sys/devices/system/cpu/cpu5/cpufreq/scaling_governor"); got != "performance" {
		t.Errorf("governor restored while job 2 still runs: %q", got)
	}
	if s := e.settings(0); s.ComputeMode != gpu.ComputeDefault {
		t.Errorf("job 1's GPU not restored at its end: %s", s.ComputeMode)
	}
	e.epilog(2)
	if d := e.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("node not at baseline after the last job: %v", d)
	}
}

func TestRequiredKnobUnsupportedFails(t *testing.T) {
	e := newEnv(t, "cloudvm", "mock:dgxh200") // no cpufreq in the VM
	// The admin's default profile requiring it fails the prolog.
	strict := *e.cfg
	strict.Selection.DefaultProfile = "strict"
	o := e.opts(3, nil, "")
	o.Config = &strict
	_, err := Prolog(context.Background(), o)
	if err == nil || !IsNodeError(err) || !strings.Contains(err.Error(), "cpu_governor") {
		t.Fatalf("want a node error naming cpu_governor, got %v", err)
	}
	// A user asking for it falls back to the default profile instead.
	if out := e.prolog(5, nil, "gpuprep=strict"); out.Profile != "default" || !strings.Contains(out.Fallback, "cpu_governor") {
		t.Errorf("user's strict profile: ran %q, fallback %q", out.Profile, out.Fallback)
	}
	// The same knob, not required, is skipped and the job runs.
	out := e.prolog(4, nil, "")
	skipped := false
	for _, s := range out.Skipped {
		skipped = skipped || s.ID.Name == "cpu_governor"
	}
	if !skipped {
		t.Errorf("cpu_governor not reported as skipped: %+v", out.Skipped)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	base := e.snap()
	o := e.opts(5, []int{0}, "")
	o.DryRun = true
	out, err := Prolog(context.Background(), o)
	if err != nil || len(out.Changes) == 0 {
		t.Fatalf("dry run: %v, %d changes", err, len(out.Changes))
	}
	if d := e.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("dry run changed the node: %v", d)
	}
	if names, _ := e.spool.List(""); len(names) > 1 { // the lock file at most
		t.Errorf("dry run wrote the spool: %v", names)
	}
}

// settings reads every setting of GPU i from the test's backend.
func (e *env) settings(i int) gpu.Settings {
	e.t.Helper()
	s, err := e.gpu.(gpu.SettingsReader).Settings(i, gpu.AllFields)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}
