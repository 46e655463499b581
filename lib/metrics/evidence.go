package metrics

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// Job GPU metric names: what finished jobs' GPUs did on this node (their
// evidence, lib/evidence), counted by the epilog into per-GPU counters.
// They carry no job label: the series per node stay one per GPU (and
// reason), however many jobs ran; one job's figures are its evidence
// (gpuprep-epilog --report --job ID).
const (
	MetricJobGPUJobs          = "gpuprep_job_gpu_jobs_total"
	MetricJobGPUSeconds       = "gpuprep_job_gpu_seconds_total"
	MetricJobGPUEnergy        = "gpuprep_job_gpu_energy_joules_total"
	MetricJobGPUEnergyUnknown = "gpuprep_job_gpu_energy_unknown_jobs_total"
	MetricJobGPUThrottle      = "gpuprep_job_gpu_throttle_seconds_total"
)

// ThrottleReasons are gpuprep_job_gpu_throttle_seconds_total's reason
// values, in the order written: lib/gpu's ThrottleCounters without their
// "_ns" suffix. A reason not listed is written after them, sorted.
var ThrottleReasons = []string{"power_cap", "sw_thermal", "hw_thermal", "power_brake", "sync_boost"}

// JobGPU is what the finished jobs counted on one GPU did there, summed:
// counters that only grow, kept in the spool with the epilog's metrics.
type JobGPU struct {
	GPULabels
	Jobs    uint64  `json:"jobs"`    // jobs counted
	Seconds float64 `json:"seconds"` // their wall time between prolog and epilog
	// EnergyJoules is the energy of the jobs whose energy is known;
	// EnergyUnknownJobs counts the others, which add nothing to it.
	EnergyJoules      float64 `json:"energy_joules"`
	EnergyUnknownJobs uint64  `json:"energy_unknown_jobs,omitempty"`
	// Throttle is the seconds the clocks were held down, by reason
	// (ThrottleReasons); a reason the GPU never reported is absent.
	Throttle map[string]float64 `json:"throttle_seconds,omitempty"`
}

// AddJobGPU counts one job on the GPU l names (keyed by its UUID, else its
// bus id): seconds of wall time, energyJ joules (nil: unknown, counted in
// EnergyUnknownJobs) and throttleSeconds by reason (a reason absent is
// unknown and adds nothing). The labels are l's from now on. A negative
// or NaN figure adds nothing, so the counters never go back.
func (m *Metrics) AddJobGPU(l GPULabels, seconds float64, energyJ *float64, throttleSeconds map[string]float64) {
	if m.JobGPUs == nil {
		m.JobGPUs = map[string]JobGPU{}
	}
	k := cmp.Or(l.UUID, l.BusID)
	g := m.JobGPUs[k]
	g.GPULabels = l
	g.Jobs++
	g.Seconds += growth(seconds)
	if energyJ == nil {
		g.EnergyUnknownJobs++
	} else {
		g.EnergyJoules += growth(*energyJ)
	}
	for reason, s := range throttleSeconds {
		if g.Throttle == nil {
			g.Throttle = map[string]float64{}
		}
		g.Throttle[reason] += growth(s)
	}
	m.JobGPUs[k] = g
}

// growth is v as a counter's increment: 0 when negative, NaN or infinite.
func growth(v float64) float64 {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// jobGPUValue is one per-GPU family of JobGPU: its name, help and value.
type jobGPUValue struct {
	name, help string
	value      func(JobGPU) float64
}

var jobGPUValues = []jobGPUValue{
	{MetricJobGPUJobs, "Finished jobs gpuprep-epilog counted on the GPU from their evidence: jobs that had the GPU to themselves (a GPU shared by jobs, MIG or MPS is not counted: its figures are not one job's). The increase of another gpuprep_job_gpu_ series over this one's is its mean per job.",
		func(g JobGPU) float64 { return float64(g.Jobs) }},
	{MetricJobGPUSeconds, "GPU seconds in the counted jobs: each job's wall time on the GPU, measured between its prolog and its epilog. Its rate is the share of time the GPU spent in jobs; it is what energy per GPU-hour and the throttled share divide by.",
		func(g JobGPU) float64 { return g.Seconds }},
	{MetricJobGPUEnergy, "Energy the GPU used during the counted jobs, in joules (its energy counter at the epilog minus at the prolog; idle time between jobs not included). Jobs whose energy is unknown add nothing here and count in gpuprep_job_gpu_energy_unknown_jobs_total.",
		func(g JobGPU) float64 { return g.EnergyJoules }},
	{MetricJobGPUEnergyUnknown, "Counted jobs on the GPU whose energy is unknown (no energy counter, or the driver was reloaded during the job): they add nothing to gpuprep_job_gpu_energy_joules_total, so energy per GPU-hour reads low while this grows.",
		func(g JobGPU) float64 { return float64(g.EnergyUnknownJobs) }},
}

// formatJobGPUs writes the job GPU families (the epilog's file only), by
// bus id then UUID, every one with HELP and TYPE.
func formatJobGPUs(b *promBuf, hook string, m Metrics) {
	if hook != HookEpilog {
		return
	}
	gpus := slices.SortedFunc(maps.Values(m.JobGPUs), func(x, y JobGPU) int { return byBus(x.GPULabels, y.GPULabels, x.UUID, y.UUID) })
	for _, f := range jobGPUValues {
		family(b, f.name, "counter", f.help)
		for _, g := range gpus {
			sample(b, f.name, f.value(g), probeLabels(b, hook, g.GPULabels)...)
		}
	}
	family(b, MetricJobGPUThrottle, "counter",
		"Seconds the GPU's clocks were held down during the counted jobs, by reason: power_cap (the power limit, the profile's choice), sw_thermal and hw_thermal (too hot: cooling, fans), power_brake (the power brake signal: power supply), sync_boost (held to other GPUs' clocks). Over gpuprep_job_gpu_seconds_total it is the share of job time; reasons may overlap. A reason unknown for a job adds nothing.")
	for _, g := range gpus {
		for _, r := range throttleReasons(g.Throttle) {
			sample(b, MetricJobGPUThrottle, g.Throttle[r], probeLabels(b, hook, g.GPULabels, "reason", r)...)
		}
	}
}

// throttleReasons are t's reasons: ThrottleReasons' order, then others
// sorted.
func throttleReasons(t map[string]float64) []string {
	var out []string
	for _, r := range ThrottleReasons {
		if _, ok := t[r]; ok {
			out = append(out, r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(t)) {
		if !slices.Contains(ThrottleReasons, r) {
			out = append(out, r)
		}
	}
	return out
}
