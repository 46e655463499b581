package healthcmd

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"gpuprep/lib/probe"
)

// writeProbeRun prints a --probe run for a person: what was left alone,
// each GPU's values, the peer copies, the findings, the verdict and what
// the health run after it did to the node.
func writeProbeRun(w io.Writer, run *probeRun) {
	for _, r := range run.Refused {
		fmt.Fprintf(w, "GPU %d (%s) not probed: %s\n", r.Index, r.BusID, r.Why)
	}
	if !run.Probed {
		fmt.Fprintf(w, "node %s not probed: %s\n", run.Node, run.Why)
		return
	}
	writeVerdict(w, run.Verdict)
	if h := run.Health; h != nil && h.Health != nil {
		writeDecision(w, h)
	}
}

// writeVerdict prints a verdict: a table of the GPUs, the peer copies,
// the findings and the verdict.
func writeVerdict(w io.Writer, v *probe.Verdict) {
	r := v.Result
	fmt.Fprintf(w, "probe of %s at %s: %d GPUs in %.1f s, CUDA driver %d\n", v.Node, v.Time.Format(time.RFC3339), len(r.GPUs), r.Seconds, r.CUDAVersion)
	if v.Forced {
		fmt.Fprintln(w, "forced: other processes used some GPUs; low values may be theirs")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tbus id\tH2D GB/s\tD2H GB/s\tmemory GB/s\tFP32 TFLOP/s\tof peak at clock\tSM MHz\tlink")
	for i, g := range r.GPUs {
		if g.Error != "" {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", g.Index, g.BusID, g.Error)
			continue
		}
		fl := v.Floors[i]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Index, g.BusID, gbps(g.H2D, fl.H2DGBps), gbps(g.D2H, fl.D2HGBps),
			gbps(g.D2D, fl.HBMGBps), tflops(g.Compute, fl.TFLOPS), ratio(g.Compute), mhz(g.Compute.During.SMClockMHz), link(g))
	}
	tw.Flush()
	writePairs(w, r.Pairs)
	for _, x := range v.Findings {
		fmt.Fprintf(w, "finding: %s GPU %d (%s): %s\n", x.Code, x.GPU, x.BusID, x.Reason)
	}
	verdict := "pass"
	if !v.Pass {
		verdict = fmt.Sprintf("FAIL (%d findings)", len(v.Findings))
	}
	fmt.Fprintln(w, "verdict:", verdict)
}

// writePairs prints the peer copies: how many had peer access and their
// range, then each that did not or failed.
func writePairs(w io.Writer, pairs []probe.Pair) {
	var rates []float64
	for _, p := range pairs {
		switch {
		case p.Error != "":
			fmt.Fprintf(w, "peer copy %d->%d: %s\n", p.From, p.To, p.Error)
		case !p.PeerAccess:
			fmt.Fprintf(w, "peer copy %d->%d: no peer access (%s)\n", p.From, p.To, p.Why)
		default:
			rates = append(rates, p.GBps)
		}
	}
	if len(rates) > 0 {
		slices.Sort(rates)
		fmt.Fprintf(w, "peer copies: %d of %d with peer access, %.1f to %.1f GB/s, median %.1f\n",
			len(rates), len(pairs), rates[0], rates[len(rates)-1], rates[len(rates)/2])
	}
}

// writeDecision prints what the health run after the probe did.
func writeDecision(w io.Writer, h *healthRun) {
	verb := "would " + string(h.Decision.Action)
	if h.Done {
		verb = string(h.Decision.Action) + "d"
		if h.Decision.Action == "drain" {
			verb = "drained"
		}
	} else if h.Decision.Action == "none" {
		verb = "no change"
	}
	fmt.Fprintf(w, "node %s: %s: %s\n", h.Node, verb, h.Decision.Why)
}

func gbps(m probe.Measurement, floor float64) string {
	if m.Error != "" {
		return "error"
	}
	return withFloor(fmt.Sprintf("%.1f", m.GBps), m.GBps, floor)
}

func tflops(c probe.Compute, floor float64) string {
	if c.Error != "" {
		return "unknown"
	}
	return withFloor(fmt.Sprintf("%.1f", c.TFLOPS), c.TFLOPS, floor)
}

// withFloor marks a value below its floor: "2100.0 < 2880".
func withFloor(s string, v, floor float64) string {
	if floor > 0 && v < floor {
		return fmt.Sprintf("%s < %.0f", s, floor)
	}
	return s
}

func ratio(c probe.Compute) string {
	if c.Ratio == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", c.Ratio*100)
}

func mhz(v uint32) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

// link is the PCIe link during the host-to-device copy against what it
// is built for: "gen5 x16 (of gen5 x16)".
func link(g probe.GPUResult) string {
	d := g.H2D.During
	if d.PCIeGen == 0 {
		return "-"
	}
	return fmt.Sprintf("gen%d x%d (of gen%d x%d)", d.PCIeGen, d.PCIeWidth, g.LinkGen, g.LinkWidth)
}
