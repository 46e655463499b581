// Package metrics is gpuprep's Prometheus metrics for node_exporter's
// textfile collector: what one writer (the prolog, the epilog,
// gpuprep-health) reports, its counters carried between runs in the spool
// (metrics.go), the health checks' and Xids' series with dcgm-exporter's
// GPU labels (health.go), the GPU speed probes' verdict (probe.go), and
// the text exposition format, written atomically as gpuprep-<writer>.prom
// (prom.go). Which directory, and what a run adds, is the commands'
// (lib/hookcmd, lib/healthcmd, through lib/textfile).
package metrics

import (
	"fmt"
	"time"

	"gpuprep/lib/drift"
	"gpuprep/lib/state"
)

// StateFile is the spool file that carries one writer's metrics between
// its runs ("metrics-epilog.json"), so its counters never go back to zero.
func StateFile(hook string) string { return "metrics-" + hook + ".json" }

// LegacyStateFile is the one file all writers shared before each had its
// own; the epilog takes its counters over once.
const LegacyStateFile = "metrics.json"

// Writers: the hooks, and gpuprep-health.
const (
	HookProlog = "prolog"
	HookEpilog = "epilog"
	HookHealth = "health"
)

// Run is one hook's last run.
type Run struct {
	End      time.Time `json:"end"`              // when it finished
	Duration float64   `json:"duration_seconds"` // wall time
	OK       bool      `json:"ok"`               // exit 0
}

// Metrics is what one writer's textfile (PromFile) reports. The event
// counts are counters: they only grow, kept in the spool (StateFile).
type Metrics struct {
	DriftEvents     map[string]uint64 `json:"drift_events"`     // by knob, Kind "drift"
	InvariantEvents map[string]uint64 `json:"invariant_events"` // by knob, Kind "invariant"
	Runs            map[string]Run    `json:"runs"`             // by hook: this writer's only
	// DeadJobs counts jobs let go of because they were over although their
	// epilog never ran, by reason: "reboot", "cgroup" or "age".
	DeadJobs map[string]uint64 `json:"dead_jobs,omitempty"`
	// Fallbacks counts jobs that ran with another profile than they asked
	// for, by the profile asked for.
	Fallbacks map[string]uint64 `json:"profile_fallbacks,omitempty"`
	// Checks are the health checks' last outcome on each scope, and XIDs
	// the Xids this writer read, by code and GPU (health.go).
	Checks map[string]CheckState `json:"checks,omitempty"`
	XIDs   map[string]XIDCount   `json:"xids,omitempty"`
	// Drained is gpuprep_node_drained (gpuprep-health only): 1 drained by
	// gpuprep, 0 not, -1 or nil unknown.
	Drained *int `json:"node_drained,omitempty"`
	// KmsgLost counts the kernel log records this writer should have read
	// but the log had lost (overwritten first): Xids in them are unknown.
	KmsgLost uint64 `json:"kmsg_lost_records,omitempty"`
	// XIDClears counts the clears of a GPU's Xid history, by GPU and by
	// whom (health.go).
	XIDClears map[string]XIDClearCount `json:"xid_clears,omitempty"`
	// StateSaved is gpuprep_health_state_saved (gpuprep-health only): 1
	// its last run saved the health state, 0 it could not; nil unknown.
	StateSaved *int `json:"state_saved,omitempty"`
	// Probe is the GPU speed probes' saved verdict as gpuprep-health last
	// read it (probe.go); nil when it read none (the probe check off, or
	// a state saved before the probes).
	Probe *ProbeState `json:"probe,omitempty"`
	// JobGPUs are the finished jobs' GPUs' figures from their evidence,
	// counted by the epilog, by GPU UUID (evidence.go).
	JobGPUs map[string]JobGPU `json:"job_gpus,omitempty"`
}

// AddFallback counts one job that fell back from profile.
func (m *Metrics) AddFallback(profile string) {
	if m.Fallbacks == nil {
		m.Fallbacks = map[string]uint64{}
	}
	m.Fallbacks[profile]++
}

// AddDeadJob counts one job released as dead, for reason.
func (m *Metrics) AddDeadJob(reason string) {
	if m.DeadJobs == nil {
		m.DeadJobs = map[string]uint64{}
	}
	m.DeadJobs[reason]++
}

// AddDrift counts recs (call it with the records drift.Append just wrote).
func (m *Metrics) AddDrift(recs []drift.Record) {
	for _, r := range recs {
		counts := &m.DriftEvents
		if r.Kind == drift.KindInvariant {
			counts = &m.InvariantEvents
		}
		if *counts == nil {
			*counts = map[string]uint64{}
		}
		(*counts)[r.Knob]++
	}
}

// SetRun records a hook's run that ended at end after d.
func (m *Metrics) SetRun(hook string, end time.Time, d time.Duration, ok bool) {
	if m.Runs == nil {
		m.Runs = map[string]Run{}
	}
	m.Runs[hook] = Run{End: end.UTC(), Duration: d.Seconds(), OK: ok}
}

// Load reads hook's StateFile from the spool. When it is missing,
// the epilog (which writes the drift records) takes over the counts of the
// LegacyStateFile, or rebuilds them from the drift file; other writers
// start from zero. When it does not parse, the same is done and the error is
// returned with the result: log it and go on (the next Save repairs
// the file); metrics never fail a job. Call it and Save under the
// spool lock. rebuilt says the drift counts were rebuilt from the drift
// file: they include the records this run appended already, so the caller
// must not count those again.
func Load(sp *state.Spool, hook string) (m Metrics, rebuilt bool, err error) {
	found, err := sp.ReadJSON(StateFile(hook), &m)
	if found && err == nil {
		return m, false, nil
	}
	m = Metrics{}
	if hook != HookEpilog {
		if err != nil {
			return m, false, fmt.Errorf("metrics: %w (started over)", err)
		}
		return m, false, nil
	}
	var legacy Metrics
	if ok, lerr := sp.ReadJSON(LegacyStateFile, &legacy); ok && lerr == nil {
		m = Metrics{DriftEvents: legacy.DriftEvents, InvariantEvents: legacy.InvariantEvents, DeadJobs: legacy.DeadJobs}
		if r, ok := legacy.Runs[hook]; ok {
			m.Runs = map[string]Run{hook: r}
		}
		if err != nil {
			return m, false, fmt.Errorf("metrics: %w (counts taken from %s)", err, LegacyStateFile)
		}
		return m, false, nil
	}
	recs, _, rerr := drift.Read(sp, time.Time{})
	m.AddDrift(recs)
	if err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return m, true, fmt.Errorf("metrics: %w (drift counts rebuilt from %s)", err, drift.FileName)
	}
	return m, true, nil
}

// Save writes m to hook's StateFile in the spool, atomically.
func Save(sp *state.Spool, hook string, m Metrics) error {
	return sp.WriteJSON(StateFile(hook), m)
}
