package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
)

// recoveryConfig sets every kind of knob, GPU clocks and power included, and
// tells dead jobs at once (no grace).
const recoveryConfig = `
[general]
dead_job_grace = "0s"
[profiles.default]
cpu_governor = "performance"
thp_enabled = "never"
vm_swappiness = 10
kernel_numa_balancing = 0
gpu_persistence = true
gpu_compute_mode = "exclusive_process"
gpu_power_limit_w = 500
gpu_locked_clocks_mhz = [1980, 1980]
[profiles.default.invariants]
gpu_persistence = true
[profiles.quiet]
inherits = "default"
thp_enabled = "always"
gpu_power_limit_w = 600
`

func newRecoveryEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	cfg, err := config.Parse("recovery.toml", []byte(recoveryConfig))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	return e
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) atBaseline(base map[string]string, what string) {
	e.t.Helper()
	if d := e.snap().Diff(base, 8); len(d) != 0 {
		e.t.Fatalf("%s: node not at baseline: %v", what, d)
	}
}

func (e *env) spoolClean(what string) {
	e.t.Helper()
	names, _ := os.ReadDir(e.spool.Dir())
	for _, n := range names {
		if n.Name() == journalFile || strings.HasPrefix(n.Name(), jobPrefix) || strings.HasPrefix(n.Name(), ".") {
			e.t.Fatalf("%s: spool not clean: %s left", what, n.Name())
		}
	}
}

// lockedClocks reads the mock GPU's saved locked clock range.
func (e *env) lockedClocks(index int) (uint32, uint32) {
	e.t.Helper()
	devs, _ := e.gpu.Devices()
	b, err := os.ReadFile(filepath.Join(e.root, "run/gpuprep-mock", devs[index].UUID+".json"))
	if err != nil {
		e.t.Fatal(err)
	}
	var v struct {
		Min uint32 `json:"locked_min_mhz"`
		Max uint32 `json:"locked_max_mhz"`
	}
	json.Unmarshal(b, &v)
	return v.Min, v.Max
}

// killedProlog runs a prolog and leaves its journal behind, as a prolog
// killed after its last change and before it dropped the journal does.
func (e *env) killedProlog(job uint64, gpus []int, comment string) {
	e.t.Helper()
	var before NodeFile
	e.spool.ReadJSON(nodeFile, &before)
	o := e.opts(job, gpus, comment)
	out := e.prolog(job, gpus, comment)
	if err := writeJournal(e.spool, &Journal{Op: opProlog, Job: out.Job, Started: o.now(), Changes: out.Changes, NodeBefore: before}); err != nil {
		e.t.Fatal(err)
	}
}

// killedRelease leaves the journal of an epilog killed right after writing
// it, before any restore.
func (e *env) killedRelease(job uint64) {
	e.t.Helper()
	o := e.opts(job, nil, "")
	o.DryRun = true
	out, err := Epilog(context.Background(), o)
	if err != nil {
		e.t.Fatal(err)
	}
	var node NodeFile
	e.spool.ReadJSON(nodeFile, &node)
	rec, _ := readJobRecords(e.spool)
	r := rec[out.Job]
	j := &Journal{Op: opRelease, Job: out.Job, Started: time.Now(), Changes: out.Changes, NodeBefore: node, NodeAfter: node, JobBefore: r,
		Drift: driftRecords(newRun(e.opts(job, nil, "")), r, out.Drift)}
	if err := writeJournal(e.spool, j); err != nil {
		e.t.Fatal(err)
	}
}

// A rollback writes the journaled value whatever the file holds now: a
// value cut in half (empty) never leaves the node tuned.
func TestRollbackOverGarbage(t *testing.T) {
	e := newRecoveryEnv(t)
	base := e.snap()
	e.killedProlog(1, []int{0}, "")
	e.write("sys/devices/system/cpu/cpufreq/policy99/scaling_governor", "")
	e.write("sys/kernel/mm/transparent_hugepage/enabled", "nev")
	e.epilog(1) // Slurm may run the failed job's epilog: it finds the journal first
	e.atBaseline(base, "after the killed prolog's roll back")
	e.spoolClean("after roll back")
}

// Locked clocks read back as "unknown"; a roll back still resets them.
func TestRollbackResetsLockedClocks(t *testing.T) {
	e := newRecoveryEnv(t)
	e.prolog(9, []int{5}, "")
	e.epilog(9) // mock settings files exist: part of the baseline
	base := e.snap()
	e.killedProlog(1, []int{0}, "")
	if lo, hi := e.lockedClocks(0); lo != 1980 || hi != 1980 {
		t.Fatalf("prolog did not lock clocks: %d,%d", lo, hi)
	}
	e.prolog(2, []int{3}, "") // the next job's prolog, not a re-run
	if lo, hi := e.lockedClocks(0); lo != 0 || hi != 0 {
		t.Fatalf("GPU 0 clocks still locked after roll back: %d,%d", lo, hi)
	}
	e.epilog(2)
	e.atBaseline(base, "after job 2")
	e.spoolClean("after job 2")
}

// A killed epilog is rolled forward by whatever runs next: the job is over.
func TestKilledEpilogRolledForward(t *testing.T) {
	e := newRecoveryEnv(t)
	e.prolog(9, []int{5}, "")
	e.epilog(9)
	base := e.snap()
	e.prolog(1, []int{0}, "")
	e.write("proc/sys/vm/swappiness", "60\n") // drift under job 1
	e.killedRelease(1)
	// The node drains ("Epilog error"), is resumed, and job 2 starts.
	e.prolog(2, []int{1}, "gpuprep=quiet")
	if found, _ := e.spool.ReadJSON(jobFile("1"), &JobRecord{}); found {
		t.Fatal("job 1 still holds the node after its killed epilog")
	}
	// Job 2 got its own profile's values, not job 1's.
	if got := e.read("sys/kernel/mm/transparent_hugepage/enabled"); !strings.Contains(got, "[always]") {
		t.Errorf("job 2's THP %q", got)
	}
	if lo, _ := e.lockedClocks(0); lo != 0 {
		t.Error("job 1's GPU still has locked clocks")
	}
	e.epilog(2)
	e.atBaseline(base, "after job 2")
	e.spoolClean("after job 2")
	// Job 1's drift was recorded once, though its epilog never finished.
	recs, _, _ := drift.Read(e.spool, time.Time{})
	n := 0
	for _, r := range recs {
		if r.Job == "1" && r.Knob == "vm_swappiness" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("job 1's swappiness drift recorded %d times, want 1", n)
	}
	// An admin's retry of the killed epilog finds nothing left to do.
	if out := e.epilog(1); len(out.Changes) != 0 {
		t.Errorf("retry changed %v", out.Changes)
	}
}

// An epilog killed after it let go of its job and before it removed the
// job's notices for srunwrap leaves them, and no hook runs for that job
// again: the next hook of any job removes them, and keeps a running job's
// and its own job's.
func TestNoticesOfAGoneJobRemoved(t *testing.T) {
	e := newRecoveryEnv(t)
	r := host.NewRoot(e.root)
	e.prolog(1, []int{0}, "gpuprep=nosuch")
	e.prolog(2, []int{1}, "gpuprep=nosuch")
	e.epilog(1)
	// What the killed epilog left: job 1's notices, put back as the
	// prolog wrote them.
	if err := nodedesc.WriteNotice(r, nodedesc.Notice{Job: 1, Messages: []string{"told"}}); err != nil {
		t.Fatal(err)
	}
	e.prolog(3, []int{2}, "gpuprep=nosuch")
	for job, want := range map[uint64]bool{1: false, 2: true, 3: true} {
		n, err := nodedesc.LoadNotice(r, job)
		if err != nil || (len(n.Messages) > 0) != want {
			t.Errorf("job %d: notices %q, %v; want them there: %v", job, n.Messages, err, want)
		}
	}
}

// A restore that fails keeps the job's record, holding what failed, so the
// documented retry can finish it; the drift is recorded once.
func TestFailedRestoreKeepsRecordForRetry(t *testing.T) {
	e := newRecoveryEnv(t)
	base := e.snap()
	e.prolog(1, []int{0}, "")
	e.write("proc/sys/vm/dirty_ratio", "33\n")  // not managed: untouched
	e.gpu.(gpu.Setter).SetPersistence(0, false) // drift and broken invariant
	swp := filepath.Join(e.root, "proc/sys/vm/swappiness")
	os.Remove(swp)
	os.Mkdir(swp, 0o755) // writing it fails
	_, err := Epilog(context.Background(), e.opts(1, nil, ""))
	if err == nil || !IsNodeError(err) || !strings.Contains(err.Error(), "vm_swappiness") {
		t.Fatalf("want a restore failure naming vm_swappiness, got %v", err)
	}
	var rec JobRecord
	if found, _ := e.spool.ReadJSON(jobFile("1"), &rec); !found || len(rec.Holds) != 1 || rec.Holds[0].ID.Name != "vm_swappiness" || !rec.DriftChecked {
		t.Fatalf("record after a failed restore: found=%v %+v", found, rec)
	}
	if got := e.read("sys/devices/system/cpu/cpu3/cpufreq/scaling_governor"); got == "performance" && base["sys/devices/system/cpu/cpufreq/policy3/scaling_governor"] != "performance" {
		t.Error("other knobs were not restored")
	}
	os.Remove(swp)
	e.write("proc/sys/vm/swappiness", "60\n")
	e.epilog(1) // gpuprep-epilog --job-id 1
	if found, _ := e.spool.ReadJSON(jobFile("1"), &JobRecord{}); found {
		t.Fatal("record left after a successful retry")
	}
	recs, _, _ := drift.Read(e.spool, time.Time{})
	if len(recs) != 2 { // persistence: drift and invariant; nothing twice
		t.Errorf("drift records %+v", recs)
	}
	if got := e.read("proc/sys/vm/swappiness"); got != base["proc/sys/vm/swappiness"] {
		t.Errorf("swappiness %q after retry, baseline %q", got, base["proc/sys/vm/swappiness"])
	}
}

// A second prolog for the same job with other GPUs and another profile lets
// go of what the first one set and no longer holds.
func TestSecondPrologOfAJobOrphansNothing(t *testing.T) {
	e := newRecoveryEnv(t)
	e.prolog(9, []int{5}, "")
	e.epilog(9)
	base := e.snap()
	e.prolog(1, []int{0}, "")
	e.prolog(1, []int{1}, "gpuprep=quiet") // requeued onto another GPU
	s0 := e.settings(0)
	b0 := e.baseGPU(base, 0)
	if s0.PowerLimitMW != b0.power || s0.ComputeMode != "default" {
		t.Errorf("GPU 0 left tuned by the job's first run: %+v", s0)
	}
	if lo, _ := e.lockedClocks(0); lo != 0 {
		t.Error("GPU 0 clocks left locked")
	}
	if s1 := e.settings(1); s1.PowerLimitMW != 600000 {
		t.Errorf("GPU 1 power %d, want the quiet profile's 600 W", s1.PowerLimitMW)
	}
	e.epilog(1)
	e.atBaseline(base, "after the requeued job")
	e.spoolClean("after the requeued job")
}

type gpuBase struct{ power uint32 }

func (e *env) baseGPU(base map[string]string, index int) gpuBase {
	devs, _ := e.gpu.Devices()
	for k, v := range base {
		if strings.Contains(k, devs[index].UUID) && strings.HasSuffix(k, "#power_mw") {
			var p uint32
			json.Unmarshal([]byte(v), &p)
			return gpuBase{power: p}
		}
	}
	s := e.settings(index)
	return gpuBase{power: s.DefaultPowerMW}
}

// Temporary files of killed runs are swept.
func TestTempFilesSwept(t *testing.T) {
	e := newRecoveryEnv(t)
	tmp := filepath.Join(e.spool.Dir(), ".node.json.tmp-4194303") // beyond pid_max: dead
	os.WriteFile(tmp, []byte("{"), 0o600)
	e.prolog(1, nil, "")
	if _, err := os.Lstat(tmp); err == nil {
		t.Fatal("temporary file of a killed run not swept")
	}
}

// node.json lost while a job runs: the baseline is rebuilt from the job
// records, never taken from the tuned node.
func TestLostNodeFileRebuilt(t *testing.T) {
	for _, damage := range []string{"delete", "empty", "{}", "null", "garbage"} {
		t.Run(damage, func(t *testing.T) {
			e := newRecoveryEnv(t)
			e.prolog(9, []int{5}, "")
			e.epilog(9)
			base := e.snap()
			e.prolog(1, []int{0}, "")
			p := filepath.Join(e.spool.Dir(), nodeFile)
			switch damage {
			case "delete":
				os.Remove(p)
			case "garbage":
				os.WriteFile(p, []byte("{\"baseline\": {\"cpu_gov"), 0o600)
			default:
				os.WriteFile(p, []byte(strings.TrimPrefix(damage, "empty")), 0o600)
			}
			e.prolog(2, []int{1}, "")
			e.epilog(1)
			e.epilog(2)
			e.atBaseline(base, "after both jobs")
			if damage == "garbage" {
				if _, err := os.Stat(p + ".bad"); err != nil {
					t.Error("the unreadable node.json was not kept aside")
				}
			}
		})
	}
}

// When neither node.json nor a job record has a held knob's baseline (and
// [defaults] has none), the hook refuses rather than adopt the tuned value.
func TestLostBaselineRefused(t *testing.T) {
	e := newRecoveryEnv(t)
	e.prolog(1, []int{0}, "")
	os.Remove(filepath.Join(e.spool.Dir(), nodeFile))
	var rec JobRecord
	e.spool.ReadJSON(jobFile("1"), &rec)
	rec.Baseline = nil // a record of an older gpuprep
	e.spool.WriteJSON(jobFile("1"), &rec)
	_, err := Prolog(context.Background(), e.opts(2, []int{1}, ""))
	if err == nil || !IsNodeError(err) || !strings.Contains(err.Error(), "baseline of cpu_governor@node is lost") {
		t.Fatalf("want a node error about the lost baseline, got %v", err)
	}
	if found, _ := e.spool.ReadJSON(nodeFile, &NodeFile{}); found {
		var n NodeFile
		e.spool.ReadJSON(nodeFile, &n)
		if _, ok := n.Baseline["cpu_governor@node"]; ok {
			t.Fatal("a tuned value was recorded as the baseline")
		}
	}
}

const bootA, bootB = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"

// After a reboot every job of the old boot is gone, and the baseline is
// what the freshly booted node shows; the old one is kept as history.
func TestRebootDropsJobsAndRerecordsBaseline(t *testing.T) {
	e := newRecoveryEnv(t)
	e.write("proc/sys/kernel/random/boot_id", bootA+"\n")
	e.prolog(1, []int{0}, "")
	// Reboot: the kernel is fresh, and this boot's swappiness differs.
	e.write("proc/sys/kernel/random/boot_id", bootB+"\n")
	e.write("proc/sys/vm/swappiness", "30\n")
	e.write("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
	out := e.prolog(2, []int{1}, "")
	if len(out.Released) != 1 || out.Released[0].Job != "1" || out.Released[0].Kind != "reboot" {
		t.Fatalf("released %+v", out.Released)
	}
	e.epilog(2)
	if got := e.read("proc/sys/vm/swappiness"); got != "30" {
		t.Errorf("swappiness %q restored, want this boot's 30", got)
	}
	var n NodeFile
	e.spool.ReadJSON(nodeFile, &n)
	if n.BootID != bootB || len(n.History) != 1 || n.History[0].BootID != bootA || len(n.History[0].Differences) == 0 {
		t.Fatalf("node.json after reboot: %+v", n)
	}
	e.spoolClean("after the reboot")
}

// A job whose Slurm cgroup is gone is dead: the next hook releases it as its
// epilog would. A live job (cgroup present), a young one (grace), and any
// job on a node without Slurm cgroups are kept.
func TestDeadJobReleased(t *testing.T) {
	e := newRecoveryEnv(t)
	e.prolog(9, []int{5}, "")
	e.epilog(9)
	base := e.snap()
	scope := "sys/fs/cgroup/system.slice/slurmstepd.scope/"
	// No Slurm cgroup tree yet: nothing can be told.
	e.prolog(1, []int{0}, "")
	e.prolog(2, []int{1}, "")
	if found, _ := e.spool.ReadJSON(jobFile("1"), &JobRecord{}); !found {
		t.Fatal("job 1 dropped on a node without Slurm cgroups")
	}
	os.MkdirAll(filepath.Join(e.root, scope, "job_2", "step_extern"), 0o755)
	os.MkdirAll(filepath.Join(e.root, scope, "job_3"), 0o755)
	out := e.prolog(3, []int{2}, "")
	if len(out.Released) != 1 || out.Released[0].Job != "1" || out.Released[0].Kind != "cgroup" {
		t.Fatalf("released %+v", out.Released)
	}
	if s := e.settings(0); s.ComputeMode != "default" {
		t.Error("dead job 1's GPU not restored")
	}
	if found, _ := e.spool.ReadJSON(jobFile("2"), &JobRecord{}); !found {
		t.Fatal("live job 2 dropped")
	}
	e.epilog(2)
	e.epilog(3)
	e.atBaseline(base, "after the dead job's release")
	e.spoolClean("after all jobs")

	// With a grace period, a job just started is not dead yet.
	e.cfg.General.DeadJobGrace = time.Hour
	e.prolog(4, []int{0}, "")
	if out := e.prolog(5, []int{1}, ""); len(out.Released) != 0 {
		t.Fatalf("job within grace released: %+v", out.Released)
	}
	// max_job_age: the last resort, whatever the cgroups say.
	e.cfg.General.MaxJobAge = 2 * time.Hour
	o := e.opts(6, []int{2}, "")
	o.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
	out, err := Prolog(context.Background(), o)
	if err != nil || len(out.Released) != 2 || out.Released[0].Kind != "age" {
		t.Fatalf("max_job_age: %v %+v", err, out.Released)
	}
}

// A dry run reports a dead job and changes nothing.
func TestDryRunReportsDeadJob(t *testing.T) {
	e := newRecoveryEnv(t)
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope"), 0o755)
	e.prolog(1, []int{0}, "")
	o := e.opts(2, []int{1}, "")
	o.DryRun = true
	out, err := Prolog(context.Background(), o)
	if err != nil || len(out.Released) != 1 {
		t.Fatalf("dry run: %v %+v", err, out.Released)
	}
	if found, _ := e.spool.ReadJSON(jobFile("1"), &JobRecord{}); !found {
		t.Fatal("dry run released a job")
	}
}

// A knob whose present value cannot be parsed at the job's end is restored
// anyway (it used to be skipped, and the record dropped: the node stayed
// tuned with nothing left to retry).
func TestEpilogRestoresUnreadableValue(t *testing.T) {
	e := newRecoveryEnv(t)
	base := e.snap()
	e.prolog(1, []int{0}, "")
	e.write("proc/sys/vm/swappiness", "sixty\n")
	e.write("sys/devices/system/cpu/cpufreq/policy7/scaling_governor", "perf ormance")
	e.epilog(1)
	e.atBaseline(base, "after an epilog over garbage")
	e.spoolClean("after an epilog over garbage")
}
