package hookcmd

import (
	"log/slog"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/state"
	"gpuprep/lib/textfile"
)

// recordMetrics updates this hook's counters in the spool (drift events by
// knob, dead jobs, profile fallbacks, the health checks and Xids, what the
// finished job's GPUs did (its evidence), this
// run's duration and status) and writes them, with gpuprep_build_info, to
// node_exporter's textfile directory as gpuprep-<op>.prom (textfile.Write).
// Called under the node lock; failures are only logged.
func recordMetrics(r host.Root, cfg *config.Config, sp *state.Spool, op, node string, d time.Duration, runErr error, out *hook.Outcome, log *slog.Logger) {
	textfile.Write(r, cfg, sp, op, node, log, func(m *metrics.Metrics, rebuilt bool) {
		if out != nil && len(out.Drift) > 0 && !rebuilt {
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
			if out.FallbackFrom != "" {
				m.AddFallback(out.FallbackFrom)
			}
			if out.Health != nil {
				textfile.AddHealth(m, out.Health, time.Now())
			}
			if r := out.EvidenceRecord; r != nil {
				textfile.AddEvidence(m, *r, textfile.EvidenceLabels(*r)) // once: this run wrote it
			}
		}
		m.SetRun(op, time.Now(), d, runErr == nil)
	})
}
