package hookcmd

import (
	"log/slog"
	"time"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
	"gpuprep/lib/state"
)

// recordMetrics updates the spool's counters (drift events by knob, this
// hook's last duration and status) and writes them, with gpuprep_build_info,
// to node_exporter's textfile directory (metricsDir). Called under the node
// lock; failures are only logged.
func recordMetrics(r host.Root, cfg *config.Config, sp *state.Spool, op string, d time.Duration, runErr error, out *hook.Outcome, log *slog.Logger) {
	dir := metricsDir(r, cfg, sp, log)
	if dir == "" {
		return
	}
	m, err := drift.LoadMetrics(sp)
	if err != nil {
		log.Warn("metrics state rebuilt", "err", err)
	}
	if out != nil && len(out.Drift) > 0 {
		recs := make([]drift.Record, len(out.Drift))
		for i, f := range out.Drift {
			recs[i] = drift.Record{Knob: f.ID.Name, Scope: f.ID.Scope, Kind: f.Kind}
		}
		m.AddDrift(recs)
	}
	if out != nil {
		for _, r := range out.Released {
			m.AddDeadJob(r.Kind)
		}
	}
	m.SetRun(op, time.Now(), d, runErr == nil)
	if err := drift.SaveMetrics(sp, m); err != nil {
		log.Warn("metrics state not saved", "err", err)
	}
	if removed, err := state.SweepTemps(dir, drift.PromFile); err != nil {
		log.Warn("sweeping temporary metrics files", "err", err)
	} else if len(removed) > 0 {
		log.Info("removed temporary metrics files of killed runs", "files", removed)
	}
	if err := drift.WriteMetrics(dir, m, drift.Build{Version: cmdenv.Version, Commit: cmdenv.Commit}); err != nil {
		log.Warn("metrics not written", "dir", dir, "err", err)
	}
}
