// Package textfile writes a run's metrics (lib/metrics) into
// node_exporter's textfile directory, for the programs that keep them:
// gpuprep-prolog and gpuprep-epilog (lib/hookcmd) and gpuprep-health
// (lib/healthcmd). Which directory (general.metrics_dir; "auto" is the one
// node_exporter reads, lib/textfiledir), warned about once per boot when
// there is none (dir.go); the counters carried between runs in the spool;
// and what a health report and the probes' verdict add, with
// dcgm-exporter's GPU labels.
package textfile

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/probe"
	"gpuprep/lib/state"
)

// Write loads writer's metrics (metrics.HookProlog, HookEpilog or
// HookHealth) from the spool, lets update change them (rebuilt: the drift
// counts came from the drift file, this run's records included), saves
// them and writes gpuprep-<writer>.prom, with gpuprep_build_info, into
// the textfile directory general.metrics_dir names (none: nothing is
// loaded or written). Call it under the node lock; failures are only
// logged: metrics never fail a run.
func Write(r host.Root, cfg *config.Config, sp *state.Spool, writer, node string, log *slog.Logger, update func(m *metrics.Metrics, rebuilt bool)) {
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
	if err := metrics.Write(dir, writer, metrics.Node{Hostname: host, SlurmName: node}, m, metrics.Build{Version: cmdenv.Version, Commit: cmdenv.Commit}); err != nil {
		log.Warn("metrics not written", "dir", dir, "err", err)
	}
}

// AddHealth records a health report in m: each check's status on each GPU
// (or the node), the xid status of every GPU a fatal Xid stands against
// (Report.Standing), each new Xid, the driver's clears and the kernel log
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
	// A fatal Xid that stands keeps its GPU's xid status whatever the run
	// found new (an epilog's, a prolog's of other GPUs).
	for _, r := range slices.Concat(rep.Results, rep.Standing) {
		if status, ok := checkStatus(r); ok {
			m.SetCheck(r.Check, labels(r.BusID), status, metrics.Failure{Code: r.Code, Action: string(r.Action)}, r.Status == health.Skip, now, seen)
		}
	}
	for _, x := range rep.XIDs {
		m.AddXID(x.Code, x.Severity, labels(x.BusID))
	}
}

// checkStatus is a result's status metric value; ok false for a failure
// whose severity is off (not a finding).
func checkStatus(r health.Result) (status int, ok bool) {
	if r.Status != health.Fail {
		return metrics.StatusOK, true
	}
	switch r.Severity {
	case config.HealthFatal:
		return metrics.StatusFatal, true
	case config.HealthWarn:
		return metrics.StatusWarn, true
	}
	return 0, false
}

// AddProbe records in m what the probes' saved verdict says now: status
// (lib/health's Report.Probe) and, unless it is none, the verdict v read
// from the spool: its time, whether it was forced, each GPU's values and
// floors, the peer copies with peer access, and one finding per code and
// GPU, each GPU labelled from inv as AddHealth labels it. A nil v records
// the status alone; an empty status (the probe check read no verdict)
// drops the probe series.
func AddProbe(m *metrics.Metrics, status probe.Status, v *probe.Verdict, inv []health.GPURef) {
	if status == "" {
		m.Probe = nil
		return
	}
	p := &metrics.ProbeState{Status: string(status)}
	m.Probe = p
	if v == nil || status == probe.StatusNone {
		return
	}
	p.Time, p.Forced = v.Time.UTC(), v.Forced
	labels := GPULabeller(inv)
	if r := v.Result; r != nil {
		for i, g := range r.GPUs {
			var f probe.Floors
			if i < len(v.Floors) {
				f = v.Floors[i]
			}
			p.GPUs = append(p.GPUs, probeGPU(g, f, labels(g.BusID)))
		}
		p.Pairs = probePairs(r, labels)
	}
	seen := map[string]bool{}
	for _, x := range v.Findings {
		if k := x.Code + "@" + x.BusID; !seen[k] {
			seen[k] = true
			p.Findings = append(p.Findings, metrics.ProbeFinding{Code: x.Code, GPULabels: labels(x.BusID)})
		}
	}
}

// probeGPU is one GPU's values and floors f as the metrics carry them: a
// value with an error, or of a GPU that could not be probed, is left at 0
// (no series).
func probeGPU(g probe.GPUResult, f probe.Floors, l metrics.GPULabels) metrics.ProbeGPU {
	ok := func(m probe.Measurement) float64 {
		if m.Error != "" {
			return 0
		}
		return m.GBps
	}
	out := metrics.ProbeGPU{GPULabels: l,
		Floors: metrics.ProbeFloors{H2D: f.H2DGBps, D2H: f.D2HGBps, HBM: f.HBMGBps, P2P: f.P2PGBps, TFLOPS: f.TFLOPS}}
	if g.Error != "" {
		return out // not probed at all
	}
	out.H2DGBps, out.D2HGBps, out.HBMGBps = ok(g.H2D), ok(g.D2H), ok(g.D2D)
	if c := g.Compute; c.Error == "" {
		out.TFLOPS, out.Ratio, out.SMClockMHz = c.TFLOPS, c.Ratio, float64(c.During.SMClockMHz)
	}
	return out
}

// probePairs are r's peer copies with peer access and a value, labelled
// with the GPU copied into; peer_gpu is the index of the GPU copied from
// as the inventory lists it (else as the verdict does).
func probePairs(r *probe.Result, labels func(bus string) metrics.GPULabels) []metrics.ProbePair {
	byIndex := map[int]probe.GPUResult{}
	for _, g := range r.GPUs {
		byIndex[g.Index] = g
	}
	var out []metrics.ProbePair
	for _, x := range r.Pairs {
		if !x.PeerAccess || x.Error != "" || x.GBps <= 0 {
			continue
		}
		to, known := byIndex[x.To]
		if !known {
			continue
		}
		peer := labels(byIndex[x.From].BusID).GPU
		if peer == "" {
			peer = strconv.Itoa(x.From)
		}
		out = append(out, metrics.ProbePair{GPULabels: labels(to.BusID), Peer: peer, GBps: x.GBps})
	}
	return out
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
