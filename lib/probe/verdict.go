package probe

import (
	"fmt"
	"strings"
	"time"
)

// VerdictFile is the verdict's name in the spool (/var/lib/gpuprep).
const VerdictFile = "probe-verdict.json"

// The codes of the probes' findings, in drain reasons, the log, the
// metrics and the JSON (lib/health's code table says what each means and
// what to do).
const (
	CodePCIeSlow    = "PCIE_SLOW"
	CodeHBMSlow     = "HBM_SLOW"
	CodeComputeSlow = "COMPUTE_SLOW"
	CodeP2PSlow     = "P2P_SLOW"
	CodeP2PNoPeer   = "P2P_NO_PEER"
	CodeProbeFailed = "PROBE_FAILED"
)

// Finding is one value below its floor, or a probe that could not run.
type Finding struct {
	Code  string `json:"code"`
	GPU   int    `json:"gpu"` // Target.Index
	BusID string `json:"bus_id"`
	// Peer is the other GPU of a peer copy (P2P codes).
	Peer     *int    `json:"peer,omitempty"`
	Measured float64 `json:"measured,omitempty"`
	Floor    float64 `json:"floor,omitempty"`
	Unit     string  `json:"unit,omitempty"`
	Reason   string  `json:"reason"`
}

// Verdict is a probe run judged: what was measured, the floors it was held
// to, what fell below them, and what the verdict belongs to (the boot and
// the driver: after a reboot or a driver change it says nothing).
type Verdict struct {
	Time   time.Time `json:"time"`
	Node   string    `json:"node"`
	BootID string    `json:"boot_id"`
	Driver string    `json:"driver_version"`
	// Forced: run with --force on GPUs other processes were using: its
	// values may be low for that reason alone.
	Forced   bool      `json:"forced,omitempty"`
	Pass     bool      `json:"pass"`
	Findings []Finding `json:"findings,omitempty"`
	Floors   []Floors  `json:"floors"` // per GPU, as Result.GPUs
	Result   *Result   `json:"result"`
	// Tools are the optional tools' runs (DCGM's diagnostic, nccl-tests,
	// perftest: lib/probetools), when installed.
	Tools []ToolResult `json:"tools,omitempty"`
}

// ToolResult is one run of a tool (for ib_write_bw, one HCA's loopback): what
// ran, how long, its verdict when the tool gives one, what it measured,
// and why it could not run.
type ToolResult struct {
	Tool    string   `json:"tool"`
	Version string   `json:"version,omitempty"`
	Args    []string `json:"args"`
	Seconds float64  `json:"seconds"`
	// Pass is the tool's own verdict: DCGM's (no failed test),
	// all_reduce_perf's ("Out of bounds values : 0 OK"); nil when it gave
	// none (ib_write_bw, or a run that failed).
	Pass *bool `json:"pass,omitempty"`
	// Values are what was measured, in GB/s (10^9 bytes/s) unless the name
	// says otherwise: "busbw_gbps_1GiB", "busbw_gbps_16GiB",
	// "busbw_gbps_avg" (all_reduce_perf, out of place);
	// "bw_gbps_<hca>" and "bw_gbit_<hca>" (ib_write_bw, Gb/s).
	Values map[string]float64 `json:"values,omitempty"`
	// Failed are DCGM's failed tests, one per test and entity, as
	// "GPU <id>: <test>: <message>" (or "<test>: <message>" when the
	// failure names no GPU).
	Failed []string `json:"failed,omitempty"`
	// Error says why the tool could not run or gave no result (not a
	// hardware verdict by itself).
	Error string `json:"error,omitempty"`
}

// Judge holds every GPU of r to its floors (floors[i] for r.GPUs[i]) and
// lists what fell below them; a probe that could not run is a finding
// too, except a compute probe the driver cannot compile for (unknown, not
// failed).
func Judge(r *Result, floors []Floors) []Finding {
	var out []Finding
	for i, g := range r.GPUs {
		f := floors[i]
		if g.Error != "" {
			out = append(out, Finding{Code: CodeProbeFailed, GPU: g.Index, BusID: g.BusID, Reason: g.Error})
			continue
		}
		out = append(out, judgeGPU(g, f)...)
	}
	return append(out, judgePairs(r, floors)...)
}

// judgeGPU judges one GPU's bandwidths and compute.
func judgeGPU(g GPUResult, f Floors) []Finding {
	var out []Finding
	below := func(code, what string, m Measurement, floor float64) {
		switch {
		case m.Error != "":
			out = append(out, Finding{Code: CodeProbeFailed, GPU: g.Index, BusID: g.BusID, Reason: what + ": " + m.Error})
		case floor > 0 && m.GBps < floor:
			out = append(out, Finding{Code: code, GPU: g.Index, BusID: g.BusID, Measured: m.GBps, Floor: floor, Unit: "GB/s",
				Reason: fmt.Sprintf("%s %.1f GB/s, below %.1f GB/s%s", what, m.GBps, floor, linkDuring(code, m))})
		}
	}
	below(CodePCIeSlow, "host to device", g.H2D, f.H2DGBps)
	below(CodePCIeSlow, "device to host", g.D2H, f.D2HGBps)
	below(CodeHBMSlow, "device memory", g.D2D, f.HBMGBps)
	return append(out, judgeCompute(g, f)...)
}

// linkDuring says how the PCIe link ran during a host copy (PCIE_SLOW),
// when sampled.
func linkDuring(code string, m Measurement) string {
	if code != CodePCIeSlow || m.During.PCIeGen == 0 {
		return ""
	}
	return fmt.Sprintf(" (link gen %d x%d during the copy)", m.During.PCIeGen, m.During.PCIeWidth)
}

// judgeCompute judges the compute probe: FLOP/s against the floor at the
// highest clock (a GPU held low), and the ratio to the peak at the clock
// it ran at (SMs that do less than their clock allows).
func judgeCompute(g GPUResult, f Floors) []Finding {
	c := g.Compute
	mk := func(measured, floor float64, unit, reason string) Finding {
		return Finding{Code: CodeComputeSlow, GPU: g.Index, BusID: g.BusID, Measured: measured, Floor: floor, Unit: unit, Reason: reason}
	}
	switch {
	case strings.HasPrefix(c.Error, unknownPrefix):
		return nil
	case c.Error != "":
		return []Finding{{Code: CodeProbeFailed, GPU: g.Index, BusID: g.BusID, Reason: "compute: " + c.Error}}
	case f.TFLOPS > 0 && c.TFLOPS < f.TFLOPS:
		return []Finding{mk(c.TFLOPS, f.TFLOPS, "TFLOP/s", fmt.Sprintf("FP32 %.1f TFLOP/s, below %.1f (SM clock %d MHz during the probe)",
			c.TFLOPS, f.TFLOPS, c.During.SMClockMHz))}
	case f.ComputeRatio > 0 && c.Ratio > 0 && c.Ratio < f.ComputeRatio:
		return []Finding{mk(c.Ratio, f.ComputeRatio, "of peak", fmt.Sprintf("FP32 %.1f TFLOP/s is %.0f%% of the peak at the %d MHz it ran at, below %.0f%%",
			c.TFLOPS, c.Ratio*100, c.During.SMClockMHz, f.ComputeRatio*100))}
	}
	return nil
}

// judgePairs judges the peer copies: below the floor of the GPU copied
// to, or no peer access between GPUs that have NVLinks to each other.
func judgePairs(r *Result, floors []Floors) []Finding {
	at := map[int]int{}
	for i, g := range r.GPUs {
		at[g.Index] = i
	}
	var out []Finding
	for _, p := range r.Pairs {
		to := r.GPUs[at[p.To]]
		floor := floors[at[p.To]].P2PGBps
		peer := p.From
		switch {
		case p.Error != "":
			out = append(out, Finding{Code: CodeProbeFailed, GPU: p.To, BusID: to.BusID, Peer: &peer, Reason: fmt.Sprintf("copy from GPU %d: %s", p.From, p.Error)})
		case !p.PeerAccess && floor > 0:
			out = append(out, Finding{Code: CodeP2PNoPeer, GPU: p.To, BusID: to.BusID, Peer: &peer,
				Reason: fmt.Sprintf("no peer access from GPU %d though both have NVLinks: %s", p.From, p.Why)})
		case p.PeerAccess && floor > 0 && p.GBps < floor:
			out = append(out, Finding{Code: CodeP2PSlow, GPU: p.To, BusID: to.BusID, Peer: &peer, Measured: p.GBps, Floor: floor, Unit: "GB/s",
				Reason: fmt.Sprintf("copy from GPU %d %.1f GB/s, below %.1f GB/s", p.From, p.GBps, floor)})
		}
	}
	return out
}

// Status is what a saved verdict says of the node now.
type Status string

// Statuses.
const (
	StatusPass    Status = "pass"
	StatusFail    Status = "fail"
	StatusUnknown Status = "unknown" // too old, another boot or driver: never a pass
	StatusNone    Status = "none"    // never probed
)

// Now is what Status compares a verdict with: the time, the boot, the
// driver, and how old a verdict may be.
type Now struct {
	Time   time.Time
	BootID string
	Driver string
	MaxAge time.Duration
}

// StatusOf says what v says now, and why when it is unknown.
func StatusOf(v *Verdict, now Now) (Status, string) {
	switch {
	case v == nil:
		return StatusNone, "the GPUs were never probed"
	case now.BootID != "" && v.BootID != now.BootID:
		return StatusUnknown, fmt.Sprintf("the verdict of %s is from another boot", v.Time.Format(time.RFC3339))
	case now.Driver != "" && v.Driver != now.Driver:
		return StatusUnknown, fmt.Sprintf("the verdict of %s is from driver %s, now %s", v.Time.Format(time.RFC3339), v.Driver, now.Driver)
	case now.MaxAge > 0 && now.Time.Sub(v.Time) > now.MaxAge:
		return StatusUnknown, fmt.Sprintf("the verdict of %s is older than [health] probe_max_age (%s)", v.Time.Format(time.RFC3339), now.MaxAge)
	case !v.Pass:
		return StatusFail, ""
	}
	return StatusPass, ""
}
