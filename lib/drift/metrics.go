package drift

import (
	"fmt"
	"time"

	"gpuprep/lib/state"
)

// MetricsFile is the spool file that carries the metrics between runs, so
// the prolog's and the epilog's figures both survive whichever writes the
// textfile last, and counters never go back to zero on a restart.
const MetricsFile = "metrics.json"

// Hooks.
const (
	HookProlog = "prolog"
	HookEpilog = "epilog"
)

// Run is one hook's last run.
type Run struct {
	End      time.Time `json:"end"`              // when it finished
	Duration float64   `json:"duration_seconds"` // wall time
	OK       bool      `json:"ok"`               // exit 0
}

// Metrics is what gpuprep.prom reports. The event counts are counters: they
// only grow, kept in the spool (MetricsFile), and rebuilt from the drift
// file's history when that file is missing.
type Metrics struct {
	DriftEvents     map[string]uint64 `json:"drift_events"`     // by knob, Kind "drift"
	InvariantEvents map[string]uint64 `json:"invariant_events"` // by knob, Kind "invariant"
	Runs            map[string]Run    `json:"runs"`             // by hook
	// DeadJobs counts jobs let go of because they were over although their
	// epilog never ran, by reason: "reboot", "cgroup" or "age".
	DeadJobs map[string]uint64 `json:"dead_jobs,omitempty"`
}

// AddDeadJob counts one job released as dead, for reason.
func (m *Metrics) AddDeadJob(reason string) {
	if m.DeadJobs == nil {
		m.DeadJobs = map[string]uint64{}
	}
	m.DeadJobs[reason]++
}

// AddDrift counts recs (call it with the records Append just wrote).
func (m *Metrics) AddDrift(recs []Record) {
	for _, r := range recs {
		counts := &m.DriftEvents
		if r.Kind == KindInvariant {
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

// LoadMetrics reads MetricsFile from the spool. When it is missing, the
// counts are rebuilt from the drift file. When it does not parse, they are
// rebuilt too and the error is returned with them: log it and go on (the
// next SaveMetrics repairs the file); metrics never fail a job. Call it and
// SaveMetrics under the spool lock.
func LoadMetrics(sp *state.Spool) (Metrics, error) {
	var m Metrics
	found, err := sp.ReadJSON(MetricsFile, &m)
	if found && err == nil {
		return m, nil
	}
	m = Metrics{}
	recs, _, rerr := Read(sp, time.Time{})
	m.AddDrift(recs)
	if err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return m, fmt.Errorf("metrics: %w (drift counts rebuilt from %s)", err, FileName)
	}
	return m, nil
}

// SaveMetrics writes m to MetricsFile in the spool, atomically.
func SaveMetrics(sp *state.Spool, m Metrics) error {
	return sp.WriteJSON(MetricsFile, m)
}
