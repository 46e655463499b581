package evidence

import (
	"fmt"
	"io"
	"strings"

	"gpuprep/lib/gpu"
	"gpuprep/lib/textfmt"
)

// ActShare is the least share of a GPU's time a clock-event reason must
// have held its clocks down for Advice to say what it means.
const ActShare = 0.01

// throttleAdvice is, by clock-event counter, what it means for the job and
// what to do: %[1]s is "the GPU" or "each GPU", %[2]s the share ("34%").
var throttleAdvice = map[gpu.Counter]string{
	gpu.PowerCapNs: "%[1]s was at its power limit %[2]s of the time: the job was power-bound; " +
		"a profile with a higher power limit, or less power-hungry kernels, would let it run faster",
	gpu.SWThermalNs: "%[1]s was held down by heat %[2]s of the time (software thermal slowdown): " +
		"tell your admins (cooling)",
	gpu.HWThermalNs: "%[1]s was held down by heat %[2]s of the time (hardware thermal slowdown): " +
		"tell your admins (cooling)",
	gpu.PowerBrakeNs: "the node's power brake (an external signal, power supply) held %[1]s down %[2]s of the time: " +
		"tell your admins",
	gpu.SyncBoostNs: "%[1]s was held to the slowest GPU of its sync-boost group %[2]s of the time " +
		"(the group's GPUs run at one clock: a slow or hot GPU in it slows them all)",
}

// errorAdvice is, by error counter, what its growth is and means.
var errorAdvice = map[gpu.Counter]string{
	gpu.ECCUncorrected:    "uncorrected ECC errors: the job's results may be wrong; tell your admins",
	gpu.ECCCorrected:      "corrected ECC errors: ECC fixed them; tell your admins if they keep growing",
	gpu.RemappedUncorrect: "memory rows remapped after uncorrectable errors: the job's results may be wrong; tell your admins",
	gpu.RemappedCorrect:   "memory rows remapped after correctable errors: the GPU is retiring memory; tell your admins",
	gpu.PCIeReplays:       "PCIe replays: the GPU's PCIe link resent data (slower transfers); tell your admins",
	gpu.NVLinkCRCFlit:     "NVLink CRC flit errors: the links resent data (slower transfers); tell your admins",
	gpu.NVLinkCRCData:     "NVLink CRC data errors: the links resent data (slower transfers); tell your admins",
	gpu.NVLinkReplays:     "NVLink replays: the links resent data (slower transfers); tell your admins",
	gpu.NVLinkRecoveries:  "NVLink recoveries: a link went down and was brought back; tell your admins",
}

// Advice is one line per thing the job's user can act on, in the report's
// order: each clock-event reason that held a GPU down ActShare of the time
// or more ("GPU 0: the GPU was at its power limit 34% of the time: ..."),
// then each error counter that grew. Unknown figures say nothing here.
func Advice(gs []GPUResult) []string {
	var out []string
	for _, c := range gpu.ThrottleCounters {
		if l := throttleLine(gs, c); l != "" {
			out = append(out, l)
		}
	}
	for _, c := range gpu.ErrorCounters {
		if l := errorLine(gs, c); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// throttleLine is Advice's line for clock-event counter c: the GPUs it
// held down ActShare of the time or more, and the least and most share.
func throttleLine(gs []GPUResult, c gpu.Counter) string {
	var idx []int
	lo, hi := 1.0, 0.0
	for _, g := range gs {
		th, ok := g.Throttle[c]
		if !ok || th.Share < ActShare {
			continue
		}
		idx = append(idx, g.Index)
		lo, hi = min(lo, th.Share), max(hi, th.Share)
	}
	if len(idx) == 0 {
		return ""
	}
	who, subject := "GPU "+textfmt.JoinInts(idx, ","), "the GPU"
	if len(idx) > 1 {
		who, subject = "GPUs "+textfmt.JoinInts(idx, ","), "each GPU"
	}
	pct := percent(hi)
	if percent(lo) != pct {
		pct = percent(lo) + "-" + pct
	}
	return who + ": " + fmt.Sprintf(throttleAdvice[c], subject, pct)
}

// errorLine is Advice's line for error counter c: the GPUs where it grew,
// by how much, and what that means.
func errorLine(gs []GPUResult, c gpu.Counter) string {
	var grew []string
	for _, g := range gs {
		if n := g.Errors[c]; n > 0 {
			grew = append(grew, fmt.Sprintf("GPU %d (+%d)", g.Index, n))
		}
	}
	if len(grew) == 0 {
		return ""
	}
	return strings.Join(grew, ", ") + ": " + errorAdvice[c]
}

// writeAdvice writes Advice under its title, or that nothing stands out.
func writeAdvice(w io.Writer, gs []GPUResult) {
	if len(gs) == 0 {
		return
	}
	lines := Advice(gs)
	if len(lines) == 0 {
		fmt.Fprintf(w, "\nNothing to act on: of the figures known, no clock-event reason held a GPU down %s of the time or more, "+
			"and no error counter grew.\n", percent(ActShare))
		return
	}
	fmt.Fprintln(w, "\nWhat you can do:")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
