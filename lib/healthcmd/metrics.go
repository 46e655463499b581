package healthcmd

import (
	"fmt"
	"log/slog"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/probe"
	"gpuprep/lib/state"
	"gpuprep/lib/textfile"
)

// recordHealthMetrics writes gpuprep-health.prom (textfile.Write): the
// checks' and Xids' series, the probes' (what rep.Probe says of the
// verdict, and the verdict itself, read from the spool: probeVerdict),
// gpuprep_node_drained (drained 1, 0, or -1 unknown) and
// gpuprep_health_state_saved (saved: the run saved its state), and the
// run's duration and status. Failures are only logged.
func recordHealthMetrics(r host.Root, cfg *config.Config, sp *state.Spool, node string, rep *health.Report, drained int, saved bool, d time.Duration, log *slog.Logger) {
	v := probeVerdict(sp, rep, log)
	textfile.Write(r, cfg, sp, metrics.HookHealth, node, log, func(m *metrics.Metrics, _ bool) {
		textfile.AddHealth(m, rep, time.Now())
		textfile.AddProbe(m, rep.Probe, v, rep.Inventory)
		m.Drained = &drained
		ok := 0
		if saved {
			ok = 1
		}
		m.StateSaved = &ok
		m.SetRun(metrics.HookHealth, time.Now(), d, len(rep.Fatal()) == 0 && saved)
	})
}

// probeVerdict is the whole verdict the report's probe status is of, read
// from the spool (readFullVerdict); nil when the report read none, or the
// spool now holds another one (a probe saved since: the next run reports
// it).
func probeVerdict(sp *state.Spool, rep *health.Report, log *slog.Logger) *probe.Verdict {
	if rep.ProbeTime == nil || sp == nil {
		return nil
	}
	v, err := readFullVerdict(sp)
	switch {
	case err != nil:
		log.Warn("probe verdict not read for the metrics", "err", err)
		return nil
	case v == nil || !v.Time.Equal(*rep.ProbeTime):
		return nil
	}
	return v
}

// readFullVerdict reads the probes' saved verdict from the spool
// (probe.VerdictFile), measurements and floors included; nil when there
// is none.
func readFullVerdict(sp *state.Spool) (*probe.Verdict, error) {
	var v probe.Verdict
	found, err := sp.ReadJSON(probe.VerdictFile, &v)
	if err != nil {
		return nil, fmt.Errorf("probe verdict: %w", err)
	}
	if !found {
		return nil, nil
	}
	return &v, nil
}

// recordClearMetrics counts an admin's clears (gpuprep-health --clear) in
// gpuprep-health.prom, labelling each GPU from inv where it is listed.
func recordClearMetrics(r host.Root, cfg *config.Config, sp *state.Spool, node string, cleared []health.Clear, inv []health.GPURef, log *slog.Logger) {
	textfile.Write(r, cfg, sp, metrics.HookHealth, node, log, func(m *metrics.Metrics, _ bool) {
		labels := textfile.GPULabeller(inv)
		for _, c := range cleared {
			m.AddXIDClear(metrics.ClearByAdmin, labels(c.BusID))
		}
	})
}
