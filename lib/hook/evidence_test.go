package hook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/config"
	"gpuprep/lib/evidence"
	"gpuprep/lib/evidence/evfile"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// evidenceEnv is a hook test node whose runs happen at times the test
// sets (t0 plus the offset), for its job of uid 1000.
type evidenceEnv struct {
	*env
	t0 time.Time
}

func newEvidenceEnv(t *testing.T) *evidenceEnv {
	return &evidenceEnv{env: newEnv(t, "dgxh100", "mock:dgxh100"), t0: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
}

// run is a prolog (or epilog) of job on gpus at t0+at.
func (e *evidenceEnv) run(epilog bool, job uint64, gpus []int, at time.Duration) *Outcome {
	e.t.Helper()
	o := e.opts(job, gpus, "")
	o.Job.UID = 1000
	now := e.t0.Add(at)
	o.Now = func() time.Time { return now }
	run := Prolog
	if epilog {
		run = Epilog
	}
	out, err := run(context.Background(), o)
	if err != nil {
		e.t.Fatalf("job %d: %v", job, err)
	}
	return out
}

// uuid is the UUID of the GPU at Slurm index i.
func (e *evidenceEnv) uuid(i int) string {
	devs, err := e.gpu.Devices()
	if err != nil {
		e.t.Fatal(err)
	}
	return devs[i].UUID
}

// count sets GPU i's counters (the mock re-reads them at each read).
func (e *evidenceEnv) count(i int, c gpumock.Counters) {
	e.t.Helper()
	if err := gpumock.WriteCounters(host.NewRoot(e.root), e.uuid(i), c); err != nil {
		e.t.Fatal(err)
	}
}

// records are job's evidence records on the node, newest first.
func (e *evidenceEnv) records(job string) []evidence.Record {
	e.t.Helper()
	d, err := evfile.OpenReader(e.spool.Dir())
	if err != nil {
		e.t.Fatal(err)
	}
	defer d.Close()
	recs, err := d.Find(job)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func TestEvidenceOfAJob(t *testing.T) {
	e := newEvidenceEnv(t)
	out := e.run(false, 7, []int{0, 1}, 0)
	if out.Evidence == "" {
		t.Fatalf("the prolog wrote no evidence record; warnings %v", out.Warnings)
	}
	if recs := e.records("7"); len(recs) != 1 || !recs[0].Running || len(recs[0].Start.GPUs) != 2 {
		t.Fatalf("after the prolog: %+v, want one running record of 2 GPUs", recs)
	}
	// 10 minutes at 700 W, at the power limit 34% of them, on GPU 0; GPU
	// 1's driver stops answering for its energy.
	e.count(0, gpumock.Counters{Values: map[gpu.Counter]uint64{
		gpu.EnergyMJ: gpumock.DefaultEnergyMJ + 420_000_000, gpu.PowerCapNs: 204e9, gpu.ECCCorrected: 3}})
	e.count(1, gpumock.Counters{Unsupported: []gpu.Counter{gpu.EnergyMJ}})
	out = e.run(true, 7, nil, 10*time.Minute)
	if out.EvidenceRecord == nil {
		t.Fatalf("the epilog wrote no evidence; warnings %v", out.Warnings)
	}
	recs := e.records("7")
	if len(recs) != 1 || recs[0].Running || len(recs[0].GPUs) != 2 {
		t.Fatalf("after the epilog: %+v", recs)
	}
	g0, g1 := recs[0].GPUs[0], recs[0].GPUs[1]
	if g0.EnergyJ == nil || *g0.EnergyJ != 420_000 || g0.MeanPowerW == nil || *g0.MeanPowerW != 700 {
		t.Errorf("GPU 0 energy %v J, mean %v W; want 420000 J, 700 W", g0.EnergyJ, g0.MeanPowerW)
	}
	if s := g0.Throttle[gpu.PowerCapNs].Share; s < 0.339 || s > 0.341 || g0.Errors[gpu.ECCCorrected] != 3 {
		t.Errorf("GPU 0 power cap share %v, corrected ECC %d; want 0.34 and 3", s, g0.Errors[gpu.ECCCorrected])
	}
	if g1.EnergyJ != nil || !slices.Contains(g1.Missing, gpu.EnergyMJ) || recs[0].Total.EnergyJ != nil {
		t.Errorf("GPU 1 energy %v, missing %v, job total %v: an energy the GPU stopped answering must be unknown, never 0",
			g1.EnergyJ, g1.Missing, recs[0].Total.EnergyJ)
	}
	if !g0.Attributable || !g1.Attributable {
		t.Errorf("a job alone on its GPUs: attributable %v %v", g0.Attributable, g1.Attributable)
	}
	if len(recs[0].Settings) == 0 {
		t.Error("the record names no setting the prolog applied")
	}
}

func TestEvidenceNotForAJobWithoutGPUs(t *testing.T) {
	e := newEvidenceEnv(t)
	if out := e.run(false, 8, nil, 0); out.Evidence != "" {
		t.Fatalf("a job without GPUs got evidence %s", out.Evidence)
	}
	if out := e.run(true, 8, nil, time.Minute); out.Evidence != "" || out.EvidenceRecord != nil {
		t.Fatalf("a job without GPUs got evidence %s", out.Evidence)
	}
	if _, err := os.Stat(filepath.Join(e.spool.Dir(), evfile.Sub)); err == nil {
		if recs := e.records("8"); len(recs) > 0 {
			t.Fatalf("records of a job without GPUs: %+v", recs)
		}
	}
}

func TestEvidenceOff(t *testing.T) {
	e := newEvidenceEnv(t)
	e.cfg.Evidence.Enabled = false
	e.run(false, 9, []int{0}, 0)
	if out := e.run(true, 9, nil, time.Minute); out.Evidence != "" {
		t.Fatalf("[evidence] enabled = false still wrote %s", out.Evidence)
	}
}

func TestEvidenceOfASharedGPUIsNotTheJobs(t *testing.T) {
	e := newEvidenceEnv(t)
	e.run(false, 10, []int{0}, 0)
	e.run(false, 11, []int{0}, time.Minute) // oversubscribed: another job on GPU 0
	e.run(true, 10, nil, 5*time.Minute)
	r := e.records("10")[0]
	if len(r.GPUs) != 1 || r.GPUs[0].Attributable || !strings.Contains(strings.Join(r.GPUs[0].SharedWhy, ";"), "job 11") {
		t.Fatalf("job 10's GPU shared with job 11 from its 2nd minute: %+v", r.GPUs)
	}
}

func TestEvidenceOfAJobTheRebootEnded(t *testing.T) {
	e := newEvidenceEnv(t)
	boot := filepath.Join(e.root, "proc/sys/kernel/random/boot_id")
	setBoot := func(id string) {
		if err := os.MkdirAll(filepath.Dir(boot), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(boot, []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setBoot("00000000-0000-4000-8000-000000000001")
	e.run(false, 12, []int{0}, 0)
	setBoot("00000000-0000-4000-8000-000000000002")
	e.run(false, 13, []int{1}, time.Hour)
	r := e.records("12")
	if len(r) != 1 || r[0].Running || len(r[0].Warnings) == 0 || !strings.Contains(r[0].Warnings[0], "rebooted") {
		t.Fatalf("job 12's record after a reboot ended it: %+v; want ended, figures unknown, saying why", r)
	}
}

func TestEvidenceListsTheJobsProcessesWithAccounting(t *testing.T) {
	e := newEvidenceEnv(t)
	cfg, err := config.Parse("acct.toml", []byte("[profiles.default]\ngpu_accounting = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	e.run(false, 14, []int{0}, 0)
	// NVML keeps the records of every process since the mode went on: one
	// ran before the job, one during it.
	procs := []gpu.ProcessAccounting{
		{PID: 100, Start: e.t0.Add(-time.Hour), Duration: time.Minute, GPUUtilPct: 50},
		{PID: 200, Start: e.t0.Add(time.Minute), Duration: 8 * time.Minute, GPUUtilPct: 93, MemoryUtilPct: 41, MaxMemoryBytes: 70 << 30},
	}
	if err := gpumock.WriteAccounting(host.NewRoot(e.root), e.uuid(0), procs); err != nil {
		t.Fatal(err)
	}
	e.run(true, 14, nil, 10*time.Minute)
	r := e.records("14")[0]
	if len(r.Processes) != 1 || r.Processes[0].PID != 200 || r.Processes[0].GPUUtilPct != 93 || r.Processes[0].MaxMemoryBytes != 70<<30 {
		t.Fatalf("the job's processes: %+v; want pid 200 only, 93%% GPU, 70 GiB peak (read before the epilog turned accounting off)", r.Processes)
	}
}

// A GPU in MIG mode belongs to more than the job: its figures are the
// GPU's and say so.
func TestEvidenceOfAMIGGPUIsNotTheJobs(t *testing.T) {
	e := &evidenceEnv{env: newEnv(t, "dgxa100", "mock:dgxa100"), t0: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	devs, err := e.gpu.Devices()
	if err != nil {
		t.Fatal(err)
	}
	mig := slices.IndexFunc(devs, func(d gpu.Device) bool { return d.MIG.Current })
	if mig < 0 {
		t.Fatal("the dgxa100 mock has no GPU in MIG mode")
	}
	e.run(false, 15, []int{mig}, 0)
	e.run(true, 15, nil, time.Minute)
	r := e.records("15")
	if len(r) != 1 || len(r[0].GPUs) != 1 || r[0].GPUs[0].Attributable || !strings.Contains(strings.Join(r[0].GPUs[0].SharedWhy, ";"), "MIG") {
		t.Fatalf("a job on a MIG-mode GPU: %+v; want its figures marked not the job's (MIG)", r)
	}
}

// An evidence directory the hooks must not trust (another user's) is a
// warning: the epilog restores the node and succeeds, and writes nothing
// there.
func TestEvidenceUnwritableIsAWarning(t *testing.T) {
	e := newEvidenceEnv(t)
	e.run(false, 16, []int{0}, 0)
	jobs := filepath.Join(e.spool.Dir(), evfile.Sub)
	if err := os.Chown(jobs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	out := e.run(true, 16, nil, time.Minute) // fails the test on an error
	if out.Evidence != "" || !strings.Contains(fmt.Sprint(out.Warnings), "job evidence not written") {
		t.Fatalf("epilog with a user's evidence directory: evidence %q, warnings %v", out.Evidence, out.Warnings)
	}
	if _, err := os.Stat(filepath.Join(e.spool.Dir(), jobFile("16"))); err == nil {
		t.Error("the job's record stayed: the release did not finish")
	}
}

// The epilog removes records older than [evidence] keep_days, at most
// once an hour.
func TestEvidenceRetention(t *testing.T) {
	e := newEvidenceEnv(t)
	e.cfg.Evidence.KeepDays = 1
	e.run(false, 17, []int{0}, 0)
	old := e.records("17")
	if len(old) != 1 {
		t.Fatalf("records of job 17: %d", len(old))
	}
	name := filepath.Join(e.spool.Dir(), evfile.Sub, "17-20261206T100000Z.json")
	twoDays := e.t0.Add(-48 * time.Hour)
	e.run(true, 17, nil, time.Minute)
	if err := os.Chtimes(name, twoDays, twoDays); err != nil {
		t.Fatal(err)
	}
	e.run(false, 18, []int{0}, 30*time.Minute)
	e.run(true, 18, nil, 40*time.Minute) // pruned 39 minutes ago: not again
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("job 17's record went before the hour since the last prune: %v", err)
	}
	e.run(false, 19, []int{0}, 2*time.Hour)
	e.run(true, 19, nil, 2*time.Hour+time.Minute)
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("job 17's record, 2 days old with keep_days = 1: %v, want removed", err)
	}
	if len(e.records("19")) != 1 || len(e.records("18")) != 1 {
		t.Error("the prune removed a record younger than keep_days")
	}
}

// An application Xid on the job's GPU while it ran is in its record.
func TestEvidenceNamesTheJobsXids(t *testing.T) {
	e := newEvidenceEnv(t)
	kmsg := filepath.Join(e.root, "dev/kmsg")
	os.MkdirAll(filepath.Dir(kmsg), 0o755)
	if err := os.WriteFile(kmsg, []byte("6,0,0,-;Linux version 6.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(false, 20, []int{0}, 0)
	devs, _ := e.gpu.Devices()
	bus := strings.TrimPrefix(devs[0].BusID, "0000:")
	line := fmt.Sprintf("4,1,5000000,-;NVRM: Xid (PCI:0000:%s): 13, pid=4242, name=python, Graphics SM Warp Exception\n", bus[:len(bus)-2])
	f, err := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	e.run(true, 20, nil, time.Minute)
	r := e.records("20")[0]
	if !strings.Contains(strings.Join(r.Xids, "\n"), "Xid 13") {
		t.Fatalf("job 20's record lacks its Xid 13: %q", r.Xids)
	}
}
