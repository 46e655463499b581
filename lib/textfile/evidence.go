package textfile

import (
	"slices"
	"strings"

	"gpuprep/lib/evidence"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/metrics"
)

// AddEvidence counts a finished job's evidence r into m's job GPU counters
// (metrics.AddJobGPU): once per GPU the job had to itself, its wall time,
// energy and the seconds each clock-event reason held the clocks down,
// each GPU labelled by labels (its bus id as the record has it; see
// EvidenceLabels). Call it once per record, from the epilog.
//
// Left out: a record still running or without the epilog's snapshot; a
// GPU that was shared (not Attributable, or listed in r.Shared), since its
// figures are the whole GPU's and counting them once per sharing job would
// count them twice; a GPU whose counters could not be read (Error); a GPU
// labels cannot name. A counter in the GPU's Missing or Reset adds
// nothing: energy then counts the job as of unknown energy, a throttle
// reason adds no seconds.
func AddEvidence(m *metrics.Metrics, r evidence.Record, labels func(bus string) metrics.GPULabels) {
	if r.Running || r.End == nil {
		return
	}
	for _, g := range r.GPUs {
		if !g.Attributable || len(r.Shared[g.UUID]) > 0 || g.Error != "" {
			continue
		}
		l := labels(g.BusID)
		if l.UUID == "" && l.BusID == "" {
			continue
		}
		unknown := func(c gpu.Counter) bool { return slices.Contains(g.Missing, c) || slices.Contains(g.Reset, c) }
		energy := g.EnergyJ
		if unknown(gpu.EnergyMJ) {
			energy = nil
		}
		throttle := map[string]float64{}
		for _, c := range gpu.ThrottleCounters {
			if t, ok := g.Throttle[c]; ok && !unknown(c) {
				throttle[ThrottleReason(c)] = t.Seconds
			}
		}
		m.AddJobGPU(l, g.Seconds, energy, throttle)
	}
}

// ThrottleReason is a clock-event counter's reason label: its name without
// the "_ns" suffix ("sw_thermal_ns" -> "sw_thermal"), one of
// metrics.ThrottleReasons.
func ThrottleReason(c gpu.Counter) string { return strings.TrimSuffix(string(c), "_ns") }

// EvidenceLabels labels r's GPUs as GPULabeller does (the NVML index as
// gpu, the UUID, the bus id in NVML's form), from the record's own
// GPUResults: for the epilog, which has the record but no health
// inventory. A bus id the record does not list has its pci_bus_id only.
func EvidenceLabels(r evidence.Record) func(bus string) metrics.GPULabels {
	inv := make([]health.GPURef, 0, len(r.GPUs))
	for _, g := range r.GPUs {
		inv = append(inv, health.GPURef{Index: g.Index, UUID: g.UUID, BusID: g.BusID})
	}
	return GPULabeller(inv)
}
