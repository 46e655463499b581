package evidence

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
	"gpuprep/lib/plural"
)

// WriteFleet writes the fleet view gs (as Fleet sorts it, the most
// throttled first): one row a GPU with its jobs, GPU hours, the share of
// the jobs' time each clock-event reason held it down, its kWh per GPU
// hour and the errors that grew. top > 0 writes that many rows, 0 all.
func WriteFleet(w io.Writer, gs []FleetGPU, top int) error {
	nodes := map[string]bool{}
	for _, g := range gs {
		nodes[g.Node] = true
	}
	shown := gs
	title := "most throttled first"
	if top > 0 && len(gs) > top {
		shown = gs[:top]
		title = fmt.Sprintf("the %d most throttled first", top)
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Fleet: %s on %s, %s (shares of the time of the jobs that had the GPU to themselves)\n",
		gpusWord(len(gs)), plural.Count(len(nodes), "node", "nodes"), title)
	heads := []string{"NODE", "BUS ID", "JOBS", "SHARED", "GPU HOURS"}
	for _, c := range gpu.ThrottleCounters {
		heads = append(heads, strings.ToUpper(CounterLabel(c)))
	}
	fmt.Fprintln(tw, strings.Join(append(heads, "KWH/GPU HOUR", "ERRORS GREW"), "\t"))
	for _, g := range shown {
		fmt.Fprintln(tw, strings.Join(fleetCells(g), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("fleet evidence report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write fleet evidence report: %w", err)
	}
	return nil
}

// fleetCells are g's row of WriteFleet's table.
func fleetCells(g FleetGPU) []string {
	cells := []string{drift.Show(g.Node), drift.Show(g.BusID), fmt.Sprint(g.Jobs), fmt.Sprint(g.SharedJobs),
		fmt.Sprintf("%.1f", g.GPUSeconds/3600)}
	for _, c := range gpu.ThrottleCounters {
		if s, ok := g.Throttle[c]; ok {
			cells = append(cells, percent(s))
		} else {
			cells = append(cells, "unknown")
		}
	}
	energy := "unknown"
	if g.EnergyPerGPUHourKWh != nil {
		energy = fmt.Sprintf("%.3f", *g.EnergyPerGPUHourKWh)
	}
	var grew []string
	for _, c := range gpu.ErrorCounters {
		if n := g.ErrorsGrew[c]; n > 0 {
			grew = append(grew, fmt.Sprintf("%s +%d", CounterLabel(c), n))
		}
	}
	if len(grew) == 0 {
		grew = []string{"none"}
	}
	return append(cells, energy, strings.Join(grew, ", "))
}
