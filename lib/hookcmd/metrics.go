package hookcmd

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/state"
)

// recordMetrics updates this hook's counters in the spool (drift events by
// knob, dead jobs, profile fallbacks, the health checks and Xids, this
// run's duration and status) and writes them, with gpuprep_build_info, to
// node_exporter's textfile directory (metricsDir) as gpuprep-<op>.prom.
// Called under the node lock; failures are only logged.
func recordMetrics(r host.Root, cfg *config.Config, sp *state.Spool, op string, d time.Duration, runErr error, out *hook.Outcome, log *slog.Logger) {
	writeMetrics(r, cfg, sp, op, log, func(m *metrics.Metrics, rebuilt bool) {
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
				addHealth(m, out.Health, time.Now())
			}
		}
		m.SetRun(op, time.Now(), d, runErr == nil)
	})
}

// recordHealthMetrics is recordMetrics for gpuprep-health:
// gpuprep-health.prom, with gpuprep_node_drained (drained 1, 0, or -1
// unknown) and gpuprep_health_state_saved (saved: the run saved its state).
func recordHealthMetrics(r host.Root, cfg *config.Config, sp *state.Spool, rep *health.Report, drained int, saved bool, d time.Duration, log *slog.Logger) {
	writeMetrics(r, cfg, sp, metrics.HookHealth, log, func(m *metrics.Metrics, _ bool) {
		addHealth(m, rep, time.Now())
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
	writeMetrics(r, cfg, sp, metrics.HookHealth, log, func(m *metrics.Metrics, _ bool) {
		labels := gpuLabeller(inv)
		for _, c := range cleared {
			m.AddXIDClear(metrics.ClearByAdmin, labels(c.BusID))
		}
	})
}

// writeMetrics loads hook's metrics from the spool, lets update change
// them (rebuilt: the drift counts came from the drift file, this run's
// records included), saves them and writes the textfile.
func writeMetrics(r host.Root, cfg *config.Config, sp *state.Spool, hook string, log *slog.Logger, update func(m *metrics.Metrics, rebuilt bool)) {
	dir := metricsDir(r, cfg, sp, log)
	if dir == "" {
		return
	}
	m, rebuilt, err := metrics.Load(sp, hook)
	if err != nil {
		log.Warn("metrics state rebuilt", "err", err)
	}
	update(&m, rebuilt)
	if err := metrics.Save(sp, hook, m); err != nil {
		log.Warn("metrics state not saved", "err", err)
	}
	if removed, err := state.SweepTemps(dir, metrics.PromFile(hook)); err != nil {
		log.Warn("sweeping temporary metrics files", "err", err)
	} else if len(removed) > 0 {
		log.Info("removed temporary metrics files of killed runs", "files", removed)
	}
	host, _ := os.Hostname()
	if err := metrics.Write(dir, hook, host, m, metrics.Build{Version: cmdenv.Version, Commit: cmdenv.Commit}); err != nil {
		log.Warn("metrics not written", "dir", dir, "err", err)
	}
}

// addHealth records a health report: each check's status on each GPU (or
// the node), and each new Xid, labelled with the GPU as dcgm-exporter
// labels it.
func addHealth(m *metrics.Metrics, rep *health.Report, now time.Time) {
	labels := gpuLabeller(rep.Inventory)
	m.KmsgLost += rep.KmsgLost
	for _, c := range rep.Cleared {
		m.AddXIDClear(metrics.ClearByDriver, labels(c.BusID))
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if r.Check == "xid" && r.Status != health.Skip {
			// Each run reads every GPU's new Xids: its results replace
			// the last run's, or a GPU's Xid would stay fatal for ever.
			m.ResetCheck("xid")
			break
		}
	}
	for _, r := range rep.Results {
		status := metrics.StatusOK
		if r.Status == health.Fail {
			switch r.Severity {
			case config.HealthFatal:
				status = metrics.StatusFatal
			case config.HealthWarn:
				status = metrics.StatusWarn
			default:
				continue // off: not a finding
			}
		}
		m.SetCheck(r.Check, labels(r.BusID), status, r.Status == health.Skip, now, seen)
	}
	for _, x := range rep.XIDs {
		m.AddXID(x.Code, x.Severity, labels(x.BusID))
	}
}

// gpuLabeller labels a GPU by bus id as dcgm-exporter does, its index and
// UUID from inv where inv lists it.
func gpuLabeller(inv []health.GPURef) func(bus string) metrics.GPULabels {
	byBus := map[string]health.GPURef{}
	for _, g := range inv {
		byBus[g.BusID] = g
	}
	return func(bus string) metrics.GPULabels {
		if bus == "" {
			return metrics.GPULabels{}
		}
		l := metrics.GPULabels{BusID: NVMLBusID(bus)}
		if g, ok := byBus[bus]; ok {
			l.GPU, l.UUID = strconv.Itoa(g.Index), g.UUID
		}
		return l
	}
}

// NVMLBusID is a canonical PCI bus id ("0000:1b:00.0") in NVML's form,
// which dcgm-exporter's pci_bus_id label uses: an 8-digit domain, upper
// case ("00000000:1B:00.0").
func NVMLBusID(bus string) string {
	dom, rest, ok := strings.Cut(bus, ":")
	if !ok {
		return strings.ToUpper(bus)
	}
	if n, err := strconv.ParseUint(dom, 16, 32); err == nil {
		dom = fmt.Sprintf("%08X", n)
	}
	return dom + ":" + strings.ToUpper(rest)
}
