package evidence

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gpuprep/lib/gpu"
)

// counterLabels are the counters as a report names them.
var counterLabels = map[gpu.Counter]string{
	gpu.EnergyMJ:          "energy",
	gpu.PowerCapNs:        "power cap",
	gpu.SWThermalNs:       "thermal (sw)",
	gpu.HWThermalNs:       "thermal (hw)",
	gpu.PowerBrakeNs:      "power brake",
	gpu.SyncBoostNs:       "sync boost",
	gpu.ECCCorrected:      "corrected ECC",
	gpu.ECCUncorrected:    "uncorrected ECC",
	gpu.RemappedCorrect:   "remapped rows (correctable)",
	gpu.RemappedUncorrect: "remapped rows (uncorrectable)",
	gpu.PCIeReplays:       "PCIe replays",
	gpu.NVLinkCRCFlit:     "NVLink CRC flit errors",
	gpu.NVLinkCRCData:     "NVLink CRC data errors",
	gpu.NVLinkReplays:     "NVLink replays",
	gpu.NVLinkRecoveries:  "NVLink recoveries",
}

// CounterLabel is counter c as a report names it ("power cap"); the
// counter's own name for one it does not know.
func CounterLabel(c gpu.Counter) string {
	if l, ok := counterLabels[c]; ok {
		return l
	}
	return string(c)
}

// percent is share (0..1) as a whole percentage: "34%", "<1%" for a
// share above zero that rounds to 0%.
func percent(share float64) string {
	p := share * 100
	if p > 0 && math.Round(p) == 0 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// energyText is joules as "1800000 J (0.500 kWh)".
func energyText(joules float64) string {
	return fmt.Sprintf("%.0f J (%.3f kWh)", joules, joules/JoulesPerKWh)
}

// unknownText is an unknown figure: "unknown (why)".
func unknownText(why string) string {
	return "unknown (" + why + ")"
}

// shortWhy is why counter c's figure of g is unknown, in a word that fits a
// table's cell: "error", "missing", "reset" or "no time".
func shortWhy(g GPUResult, c gpu.Counter) string {
	switch {
	case g.Error != "":
		return "error"
	case slices.Contains(g.Missing, c):
		return "missing"
	case slices.Contains(g.Reset, c):
		return "reset"
	}
	return "no time"
}

// gpuCells are g's figures as a report's table shows them: energy, mean
// power, each throttle counter's share, and the errors that grew.
func gpuCells(g GPUResult) []string {
	cells := []string{unknownText(shortWhy(g, gpu.EnergyMJ)), unknownText(shortWhy(g, gpu.EnergyMJ))}
	if g.EnergyJ != nil {
		cells[0] = energyText(*g.EnergyJ)
	}
	if g.MeanPowerW != nil {
		cells[1] = fmt.Sprintf("%.0f W", *g.MeanPowerW)
	}
	for _, c := range gpu.ThrottleCounters {
		if th, ok := g.Throttle[c]; ok {
			cells = append(cells, percent(th.Share))
		} else {
			cells = append(cells, unknownText(shortWhy(g, c)))
		}
	}
	if g.Error != "" {
		return append(cells, unknownText("error"))
	}
	return append(cells, errorsText(g.Errors))
}

// totalCells are t's figures as gpuCells shows a GPU's; an unknown one
// points to the notes below the table, as do the errors when partial (an
// error counter known on some of the GPUs only: see errorsPartial).
func totalCells(t *Total, partial bool) []string {
	see := unknownText("see below")
	cells := []string{see, see}
	if t.EnergyJ != nil {
		cells[0] = energyText(*t.EnergyJ)
	}
	if t.MeanPowerW != nil {
		cells[1] = fmt.Sprintf("%.0f W per GPU", *t.MeanPowerW)
	}
	for _, c := range gpu.ThrottleCounters {
		if th, ok := t.Throttle[c]; ok {
			cells = append(cells, percent(th.Share))
		} else {
			cells = append(cells, see)
		}
	}
	errs := errorsText(t.Errors)
	if partial {
		errs += " (some GPUs unknown, see below)"
	}
	return append(cells, errs)
}

// figureHeads are the heads of gpuCells' and totalCells' columns.
func figureHeads() []string {
	heads := []string{"ENERGY", "MEAN POWER"}
	for _, c := range gpu.ThrottleCounters {
		heads = append(heads, strings.ToUpper(CounterLabel(c)))
	}
	return append(heads, "ERRORS GREW")
}

// errorsText is the error counters that grew, "uncorrected ECC +2, PCIe
// replays +5", in the report's order; "none" when none did, with how
// many were unknown.
func errorsText(errs map[gpu.Counter]uint64) string {
	var grew []string
	unknown := 0
	for _, c := range gpu.ErrorCounters {
		n, ok := errs[c]
		switch {
		case !ok:
			unknown++
		case n > 0:
			grew = append(grew, fmt.Sprintf("%s +%d", CounterLabel(c), n))
		}
	}
	text := strings.Join(grew, ", ")
	if text == "" {
		text = "none"
	}
	if unknown > 0 {
		text += fmt.Sprintf(" (%d unknown)", unknown)
	}
	return text
}
