package health

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
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
		"nvlinks", "pcie_link", "throttle", "ib_ports", "swap", "nccl_topo", "cmdqv", "xid"}
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
// read, so each XID is acted on by exactly one run. An error is a state
// that cannot be read or written; check failures are in the Report.
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
	need := Need{Checks: map[string]bool{}, TopoFile: o.Health.NCCLTopoFile, NVLinks: o.Health.NVLinks != 0 || len(o.Models) > 0}
	for _, c := range checks {
		on := o.Health.HealthSeverity(c) != config.HealthOff
		if c == "ib_ports" {
			on = on && (len(o.Health.IBDevices) > 0 || o.Health.IBRateGbps > 0)
		}
		need.Checks[c] = on
	}
	f := Gather(o.Root, o.GPU, o.GPUs, need)
	var xids []XID
	if f.KmsgRead {
		xids, f.KmsgLost = st.Advance(f.BootID, f.Kmsg)
	}
	res := Evaluate(f, Expect{Health: o.Health, Models: o.Models}, checks, xids)
	if o.Op == "epilog" {
		res = append(res, leftovers(ctx, o, f)...)
		res = append(res, external(ctx, o)...)
	}
	res = append(res, o.Extra...)
	for i := range res {
		debounce(&res[i], o.Health, st)
	}
	rep := &Report{Op: o.Op, Backend: f.Backend, GPUs: len(f.Devices), Results: res, XIDs: xids, History: maps.Clone(st.History)}
	for _, d := range f.Devices {
		rep.Inventory = append(rep.Inventory, GPURef{Index: d.Index, UUID: d.UUID, BusID: d.BusID})
	}
	for i := range rep.XIDs {
		rep.XIDs[i].Severity = XIDSeverity(o.Health, rep.XIDs[i].Code)
	}
	rep.Millis = float64(time.Since(start).Microseconds()) / 1000
	if o.ReadOnly || o.Spool == nil {
		return rep, nil
	}
	return rep, st.Save(o.Spool)
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
