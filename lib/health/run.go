package health

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/state"
)

// Checks of each run.
var (
	// PrologChecks are the fast ones: NVML counters and sysfs.
	PrologChecks = []string{"gpu_count", "driver_version", "persistence", "ecc_mode", "ecc_volatile", "row_remap",
		"nvlinks", "pcie_link", "throttle", "ib_ports", "swap", "nccl_topo", "cmdqv", "xid", "probe"}
	// EpilogChecks are the post-job ones.
	EpilogChecks = []string{"ecc_volatile", "row_remap", "xid", "leftover_processes", "external"}
)

// Options are what a health run needs.
type Options struct {
	Op     string // "prolog", "epilog" or "health" (read-only, every GPU)
	Root   host.Root
	GPU    gpu.Backend // nil: GPU checks skipped
	Health config.HealthSection
	Models Models
	// GPUs are the GPUs per-GPU checks look at (the job's); nil: every GPU.
	GPUs []gpu.Device
	// Spool holds the state (watermark, history, streaks); nil: none.
	// ReadOnly reads it and writes nothing (--health, --dry-run).
	Spool    *state.Spool
	ReadOnly bool
	// Holders gives the jobs holding each GPU (job ids by GPU UUID) as
	// the run reads the kernel log, asked only when there are new Xids:
	// they are attributed to them (XID.Jobs). The epilog's include its
	// own job. nil: no attribution.
	Holders func() map[string][]string
	// JobID is the finished job, for the epilog's leftover processes, and
	// JobSLUID its SLURM_JOB_SLUID ("" before Slurm 26.05, which names
	// the job's cgroup after it).
	JobID    string
	JobSLUID string
	// Extra are results of checks run before (gpuprep-health runs the
	// external check on an idle node before it takes the node lock): they
	// are reported and debounced with the rest.
	Extra []Result
	Log   *slog.Logger
}

// Run gathers the facts, evaluates the op's checks, debounces, and
// (unless ReadOnly) saves the state: the watermark moves past every record
// read, so each XID is new to exactly one run, and stays in its GPU's
// history until the GPU is cleared (State). An error before the checks ran
// (a state that cannot be read) comes with no report; a state that cannot
// be saved comes with the whole report, so gpuprep-health still acts on
// it (the prolog fails instead: hook.checkHealth). Check failures are in
// the Report.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	checks := PrologChecks
	if o.Op == "epilog" {
		checks = EpilogChecks
	}
	st, err := LoadState(o.Spool)
	if err != nil {
		return nil, err
	}
	f := Gather(o.Root, o.GPU, o.GPUs, need(o, checks))
	var xids []XID
	seen := st.Next
	if f.KmsgRead {
		if st.BootID != f.BootID {
			seen = 0
		}
		xids, f.KmsgLost = st.Advance(f.BootID, f.Kmsg)
		if len(xids) > 0 && o.Holders != nil {
			st.attribute(xids, f.Devices, o.Holders())
		}
		logAppFaults(o, xids)
	}
	if slices.Contains(checks, "probe") && o.Health.HealthSeverity("probe") != config.HealthOff {
		f.Probe.Verdict, f.Probe.Err = ReadVerdict(o.Spool)
		f.Probe.Now = time.Now()
	}
	cleared := st.Observe(recoveryRead(f), seen, f.KmsgRead && len(f.KmsgLost) == 0, time.Now())
	for _, c := range cleared {
		if !o.ReadOnly {
			logf(o.Log).Warn("Xid history cleared: the driver's recovery action is back to none", "gpu", c.BusID, "xids", c.Codes, "why", c.Reason)
		}
	}
	res := Evaluate(f, Expect{Health: o.Health, Models: o.Models}, checks, Events{New: xids, History: st.History, AppJobs: st.AppJobs, Standing: o.Op != "epilog"})
	if o.Op == "epilog" {
		res = append(res, leftovers(ctx, o, f)...)
		res = append(res, external(ctx, o)...)
	}
	res = append(res, o.Extra...)
	for i := range res {
		debounce(&res[i], o.Health, st)
	}
	rep := report(o, f, st, res, xids)
	rep.Cleared = cleared
	rep.Standing = standingResults(st.History, o.Health, remapOKOf(res), f.Devices)
	rep.Probe, rep.ProbeTime = probeStatus(f, o.Health)
	rep.Millis = float64(time.Since(start).Microseconds()) / 1000
	if o.ReadOnly || o.Spool == nil {
		return rep, nil
	}
	return rep, st.Save(o.Spool)
}

// logAppFaults logs each new application Xid with the jobs it is
// attributed to (a dry run's too: it reads them as well).
func logAppFaults(o Options, xids []XID) {
	for _, x := range xids {
		if IsAppFault(x.Code) {
			logf(o.Log).Info("application Xid", "gpu", x.BusID, "xid", x.Code, "jobs", strings.Join(x.Jobs, ","))
		}
	}
}

// need is what a run of checks reads: a check off in [health.severity]
// reads nothing, ib_ports only when configured.
func need(o Options, checks []string) Need {
	n := Need{Checks: map[string]bool{}, TopoFile: o.Health.NCCLTopoFile, NVLinks: o.Health.NVLinks != 0 || len(o.Models) > 0}
	for _, c := range checks {
		on := o.Health.HealthSeverity(c) != config.HealthOff
		if c == "ib_ports" {
			on = on && (len(o.Health.IBDevices) > 0 || o.Health.IBRateGbps > 0)
		}
		n.Checks[c] = on
	}
	return n
}

// recoveryRead is the recovery action of each GPU in scope that could be
// read, by bus id.
func recoveryRead(f *Facts) map[string]gpu.RecoveryAction {
	out := map[string]gpu.RecoveryAction{}
	for _, g := range f.GPUs {
		if g.RecoveryErr == nil {
			out[g.Dev.BusID] = g.Recovery
		}
	}
	return out
}

// report is the run's Report: its results, the new Xids and the GPUs'
// histories with what each record means now, the recovery actions read,
// and the kernel log records lost.
func report(o Options, f *Facts, st *State, res []Result, xids []XID) *Report {
	rep := &Report{Op: o.Op, Backend: f.Backend, GPUs: len(f.Devices), Results: res, XIDs: xids, KmsgLost: lostCount(f.KmsgLost)}
	for _, d := range f.Devices {
		rep.Inventory = append(rep.Inventory, GPURef{Index: d.Index, UUID: d.UUID, BusID: d.BusID})
	}
	for i := range rep.XIDs {
		rep.XIDs[i].Severity = XIDSeverity(o.Health, rep.XIDs[i].Code, rep.XIDs[i].To)
	}
	if len(st.History) > 0 {
		rep.History = map[string]GPUHistory{}
	}
	for bus, h := range st.History {
		h = slices.Clone(h)
		for i := range h {
			h[i].Severity = XIDSeverity(o.Health, h[i].Code, h[i].To)
		}
		rep.History[bus] = h
	}
	for bus, a := range recoveryRead(f) {
		if rep.Recovery == nil {
			rep.Recovery = map[string]gpu.RecoveryAction{}
		}
		rep.Recovery[bus] = a
	}
	return rep
}

// lostCount is how many records gaps hold; a gap of unknown end counts
// one (at least one record was lost).
func lostCount(gaps []Gap) uint64 {
	var n uint64
	for _, g := range gaps {
		if g.To == 0 {
			n++
		} else {
			n += g.To - g.From
		}
	}
	return n
}

// logf is l, or a logger that discards.
func logf(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// debounce applies a check's [health.debounce]: a failure counts at its
// severity only on the Nth consecutive failure of that check and scope;
// before that a fatal one is a warning. Skipped results leave the streak
// as it is. XIDs are events, never debounced.
func debounce(r *Result, h config.HealthSection, st *State) {
	n := h.HealthDebounce(r.Check)
	if n <= 1 || r.Check == "xid" || r.Status == Skip {
		return
	}
	s := st.streak(r.key(), r.Status == Fail)
	if r.Status != Fail {
		return
	}
	r.Streak, r.Debounce = s, n
	if s < n && r.Severity == config.HealthFatal {
		r.Severity = config.HealthWarn
		r.Reason += fmt.Sprintf(" (failure %d of %d before it drains)", s, n)
	}
}
