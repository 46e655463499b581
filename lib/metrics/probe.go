package metrics

import (
	"cmp"
	"slices"
	"time"
)

// Probe metric names: the GPU speed probes' verdict (gpuprep-health
// --probe, lib/probe) as gpuprep-health last read it.
const (
	MetricProbeStatus  = "gpuprep_probe_status"
	MetricProbeTime    = "gpuprep_probe_timestamp_seconds"
	MetricProbeForced  = "gpuprep_probe_forced"
	MetricProbeH2D     = "gpuprep_probe_h2d_gbps"
	MetricProbeD2H     = "gpuprep_probe_d2h_gbps"
	MetricProbeHBM     = "gpuprep_probe_hbm_gbps"
	MetricProbeTFLOPS  = "gpuprep_probe_fp32_tflops"
	MetricProbeRatio   = "gpuprep_probe_fp32_ratio_to_peak"
	MetricProbeSMClock = "gpuprep_probe_sm_clock_mhz"
	MetricProbeFloor   = "gpuprep_probe_floor"
	MetricProbeP2P     = "gpuprep_probe_p2p_gbps"
	MetricProbeFinding = "gpuprep_probe_finding"
)

// ProbeStatuses are gpuprep_probe_status's status values, in the order
// written: lib/probe's Status values (pass, fail, unknown: the verdict says
// nothing now; none: never probed).
var ProbeStatuses = []string{"pass", "fail", "unknown", "none"}

// ProbeState is the probes' saved verdict as gpuprep-health last read it:
// what it says now (Status, one of ProbeStatuses) and, when there is one,
// its summary. Values that are 0 were not measured (or failed) and have no
// series.
type ProbeState struct {
	Status   string         `json:"status"`
	Time     time.Time      `json:"time,omitzero"`
	Forced   bool           `json:"forced,omitempty"`
	GPUs     []ProbeGPU     `json:"gpus,omitempty"`
	Pairs    []ProbePair    `json:"pairs,omitempty"`
	Findings []ProbeFinding `json:"findings,omitempty"`
}

// ProbeGPU is one GPU's measurements and the floors it was held to.
type ProbeGPU struct {
	GPULabels
	H2DGBps    float64     `json:"h2d_gbps,omitempty"`
	D2HGBps    float64     `json:"d2h_gbps,omitempty"`
	HBMGBps    float64     `json:"hbm_gbps,omitempty"`
	TFLOPS     float64     `json:"fp32_tflops,omitempty"`
	Ratio      float64     `json:"fp32_ratio_to_peak,omitempty"`
	SMClockMHz float64     `json:"sm_clock_mhz,omitempty"` // during the compute probe
	Floors     ProbeFloors `json:"floors,omitzero"`
}

// ProbeFloors are one GPU's floors (0: not judged), GB/s and FP32 TFLOP/s.
type ProbeFloors struct {
	H2D    float64 `json:"h2d,omitempty"`
	D2H    float64 `json:"d2h,omitempty"`
	HBM    float64 `json:"hbm,omitempty"`
	P2P    float64 `json:"p2p,omitempty"`
	TFLOPS float64 `json:"tflops,omitempty"`
}

// ProbePair is a peer copy into the GPU of GPULabels from the GPU whose
// index is Peer, with peer access.
type ProbePair struct {
	GPULabels
	Peer string  `json:"peer_gpu"`
	GBps float64 `json:"gbps"`
}

// ProbeFinding is one finding's code on one GPU (one however many
// findings of that code the GPU has).
type ProbeFinding struct {
	Code string `json:"code"`
	GPULabels
}

// probeLabels are a probe series' labels: hook, what more says, then
// Hostname and the GPU's.
func probeLabels(b *promBuf, hook string, g GPULabels, more ...string) []string {
	return gpuLabels(b, g, append([]string{"hook", hook}, more...)...)
}

// byBus orders by PCI bus id, then by then (a code).
func byBus(a, b GPULabels, thenA, thenB string) int {
	return cmp.Or(cmp.Compare(a.BusID, b.BusID), cmp.Compare(thenA, thenB))
}

// formatProbe writes the probe families (gpuprep-health's file only),
// every one with HELP and TYPE; m.Probe nil (no verdict read) has no
// samples.
func formatProbe(b *promBuf, hook string, m Metrics) {
	if hook != HookHealth {
		return
	}
	p := m.Probe
	if p == nil {
		p = &ProbeState{}
	}
	family(b, MetricProbeStatus, "gauge",
		"What the GPU speed probes' saved verdict (gpuprep-health --probe) says now: 1 on the current status (pass; fail: a value below its floor or a probe that could not run; unknown: too old, or of another boot or driver; none: never probed), 0 on the others.")
	if p.Status != "" {
		for _, s := range ProbeStatuses {
			v := 0.0
			if s == p.Status {
				v = 1
			}
			sample(b, MetricProbeStatus, v, probeLabels(b, hook, GPULabels{}, "status", s)...)
		}
	}
	family(b, MetricProbeTime, "gauge", "When the GPU speed probes' saved verdict was taken, in seconds since the Unix epoch; absent when there is none.")
	family(b, MetricProbeForced, "gauge", "1 when the saved verdict's probes ran with --force on GPUs other processes used (its values may be low for that reason alone), 0 when not.")
	if !p.Time.IsZero() {
		sample(b, MetricProbeTime, float64(p.Time.UnixMilli())/1000, probeLabels(b, hook, GPULabels{})...)
		forced := 0.0
		if p.Forced {
			forced = 1
		}
		sample(b, MetricProbeForced, forced, probeLabels(b, hook, GPULabels{})...)
	}
	formatProbeGPUs(b, hook, p)
	formatProbePairs(b, hook, p)
}

// probeValue is one per-GPU family: its name, help and value.
type probeValue struct {
	name, help string
	value      func(ProbeGPU) float64
}

var probeValues = []probeValue{
	{MetricProbeH2D, "Host-to-device copy bandwidth the saved verdict measured on the GPU, from pinned memory on its NUMA node, in GB/s.", func(g ProbeGPU) float64 { return g.H2DGBps }},
	{MetricProbeD2H, "Device-to-host copy bandwidth the saved verdict measured on the GPU, into pinned memory on its NUMA node, in GB/s.", func(g ProbeGPU) float64 { return g.D2HGBps }},
	{MetricProbeHBM, "Device memory bandwidth the saved verdict measured on the GPU (a device-to-device copy, each byte read and written), in GB/s.", func(g ProbeGPU) float64 { return g.HBMGBps }},
	{MetricProbeTFLOPS, "FP32 compute the saved verdict measured on the GPU (an FMA kernel), in TFLOP/s.", func(g ProbeGPU) float64 { return g.TFLOPS }},
	{MetricProbeRatio, "The measured FP32 TFLOP/s over the GPU's FP32 peak at the SM clock it ran at (SMs x FP32 lanes x 2 x clock).", func(g ProbeGPU) float64 { return g.Ratio }},
	{MetricProbeSMClock, "The GPU's SM clock during the saved verdict's compute probe, in MHz.", func(g ProbeGPU) float64 { return g.SMClockMHz }},
}

// probeFloorNames are gpuprep_probe_floor's probe values, in the order of
// ProbeFloors' fields.
var probeFloorNames = []string{"h2d", "d2h", "hbm", "p2p", "tflops"}

// formatProbeGPUs writes the per-GPU values, floors and findings, by bus
// id; a value of 0 (not measured, or failed) has no sample.
func formatProbeGPUs(b *promBuf, hook string, p *ProbeState) {
	gpus := slices.SortedStableFunc(slices.Values(p.GPUs), func(x, y ProbeGPU) int { return byBus(x.GPULabels, y.GPULabels, "", "") })
	gpus = slices.CompactFunc(gpus, func(x, y ProbeGPU) bool { return x.BusID == y.BusID })
	for _, f := range probeValues {
		family(b, f.name, "gauge", f.help)
		for _, g := range gpus {
			if v := f.value(g); v > 0 {
				sample(b, f.name, v, probeLabels(b, hook, g.GPULabels)...)
			}
		}
	}
	family(b, MetricProbeFloor, "gauge",
		"The floor the saved verdict held the GPU to, by probe: h2d, d2h, hbm, p2p (a copy into it) in GB/s, tflops in FP32 TFLOP/s; floors of 0 (not judged) have no sample.")
	for _, g := range gpus {
		f := g.Floors
		for i, v := range []float64{f.H2D, f.D2H, f.HBM, f.P2P, f.TFLOPS} {
			if v > 0 {
				sample(b, MetricProbeFloor, v, probeLabels(b, hook, g.GPULabels, "probe", probeFloorNames[i])...)
			}
		}
	}
	family(b, MetricProbeFinding, "gauge",
		"1 for each code the saved verdict found on the GPU (PCIE_SLOW, HBM_SLOW, COMPUTE_SLOW, P2P_SLOW, P2P_NO_PEER, PROBE_FAILED; gpuprep-health --explain CODE says what to do).")
	finds := slices.SortedStableFunc(slices.Values(p.Findings), func(x, y ProbeFinding) int { return byBus(x.GPULabels, y.GPULabels, x.Code, y.Code) })
	finds = slices.CompactFunc(finds, func(x, y ProbeFinding) bool { return x.BusID == y.BusID && x.Code == y.Code })
	for _, x := range finds {
		sample(b, MetricProbeFinding, 1, probeLabels(b, hook, x.GPULabels, "code", x.Code)...)
	}
}

// formatProbePairs writes the peer copies, by the bus id of the GPU
// copied into, then the peer.
func formatProbePairs(b *promBuf, hook string, p *ProbeState) {
	family(b, MetricProbeP2P, "gauge",
		"Peer-to-peer copy bandwidth the saved verdict measured into the GPU from GPU peer_gpu (its index), in GB/s; pairs without peer access have no sample.")
	pairs := slices.SortedStableFunc(slices.Values(p.Pairs), func(x, y ProbePair) int {
		// Peers by index: shorter first, so "2" comes before "10".
		return cmp.Or(byBus(x.GPULabels, y.GPULabels, "", ""), cmp.Compare(len(x.Peer), len(y.Peer)), cmp.Compare(x.Peer, y.Peer))
	})
	pairs = slices.CompactFunc(pairs, func(x, y ProbePair) bool { return x.BusID == y.BusID && x.Peer == y.Peer })
	for _, x := range pairs {
		if x.GBps > 0 {
			sample(b, MetricProbeP2P, x.GBps, probeLabels(b, hook, x.GPULabels, "peer_gpu", x.Peer)...)
		}
	}
}
