// Package textfile writes a run's metrics (lib/metrics) into
// node_exporter's textfile directory, for the programs that keep them:
// gpuprep-prolog and gpuprep-epilog (lib/hookcmd) and gpuprep-health
// (lib/healthcmd). Which directory (general.metrics_dir; "auto" is the one
// node_exporter reads, lib/textfiledir), warned about once per boot when
// there is none (dir.go); the counters carried between runs in the spool;
// and what a health report adds, with dcgm-exporter's GPU labels.
package textfile

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/state"
)

// Write loads writer's metrics (metrics.HookProlog, HookEpilog or
// HookHealth) from the spool, lets update change them (rebuilt: the drift
// counts came from the drift file, this run's records included), saves
// them and writes gpuprep-<writer>.prom, with gpuprep_build_info, into
// the textfile directory general.metrics_dir names (none: nothing is
// loaded or written). Call it under the node lock; failures are only
// logged: metrics never fail a run.
func Write(r host.Root, cfg *config.Config, sp *state.Spool, writer string, log *slog.Logger, update func(m *metrics.Metrics, rebuilt bool)) {
	dir := metricsDir(r, cfg, sp, log)
	if dir == "" {
		return
	}
	m, rebuilt, err := metrics.Load(sp, writer)
	if err != nil {
		log.Warn("metrics state rebuilt", "err", err)
	}
	update(&m, rebuilt)
	if err := metrics.Save(sp, writer, m); err != nil {
		log.Warn("metrics state not saved", "err", err)
	}
	if removed, err := state.SweepTemps(dir, metrics.PromFile(writer)); err != nil {
		log.Warn("sweeping temporary metrics files", "err", err)
	} else if len(removed) > 0 {
		log.Info("removed temporary metrics files of killed runs", "files", removed)
	}
	host, _ := os.Hostname()
	if err := metrics.Write(dir, writer, host, m, metrics.Build{Version: cmdenv.Version, Commit: cmdenv.Commit}); err != nil {
		log.Warn("metrics not written", "dir", dir, "err", err)
	}
}

// AddHealth records a health report in m: each check's status on each GPU
// (or the node), each new Xid, the driver's clears and the kernel log
// records lost, labelled with the GPU as dcgm-exporter labels it.
func AddHealth(m *metrics.Metrics, rep *health.Report, now time.Time) {
	labels := GPULabeller(rep.Inventory)
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
		m.SetCheck(r.Check, labels(r.BusID), status, metrics.Failure{Code: r.Code, Action: string(r.Action)}, r.Status == health.Skip, now, seen)
	}
	for _, x := range rep.XIDs {
		m.AddXID(x.Code, x.Severity, labels(x.BusID))
	}
}

// GPULabeller labels a GPU by bus id as dcgm-exporter does, its index and
// UUID from inv where inv lists it.
func GPULabeller(inv []health.GPURef) func(bus string) metrics.GPULabels {
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
