package healthcmd

import (
	"log/slog"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/state"
	"gpuprep/lib/textfile"
)

// recordHealthMetrics writes gpuprep-health.prom (textfile.Write): the
// checks' and Xids' series, gpuprep_node_drained (drained 1, 0, or -1
// unknown) and gpuprep_health_state_saved (saved: the run saved its
// state), and the run's duration and status. Failures are only logged.
func recordHealthMetrics(r host.Root, cfg *config.Config, sp *state.Spool, rep *health.Report, drained int, saved bool, d time.Duration, log *slog.Logger) {
	textfile.Write(r, cfg, sp, metrics.HookHealth, log, func(m *metrics.Metrics, _ bool) {
		textfile.AddHealth(m, rep, time.Now())
		m.Drained = &drained
		ok := 0
		if saved {
			ok = 1
		}
		m.StateSaved = &ok
		m.SetRun(metrics.HookHealth, time.Now(), d, len(rep.Fatal()) == 0 && saved)
	})
}

// recordClearMetrics counts an admin's clears (gpuprep-health --clear) in
// gpuprep-health.prom, labelling each GPU from inv where it is listed.
func recordClearMetrics(r host.Root, cfg *config.Config, sp *state.Spool, cleared []health.Clear, inv []health.GPURef, log *slog.Logger) {
	textfile.Write(r, cfg, sp, metrics.HookHealth, log, func(m *metrics.Metrics, _ bool) {
		labels := textfile.GPULabeller(inv)
		for _, c := range cleared {
			m.AddXIDClear(metrics.ClearByAdmin, labels(c.BusID))
		}
	})
}
