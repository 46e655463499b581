package evidence

import (
	"fmt"
	"slices"

	"gpuprep/lib/gpu"
)

// MaxPlausiblePowerW is the highest mean power, in watts, one GPU is taken
// to draw between two snapshots. An energy delta that means more is no
// job's energy: the counter jumped, and Diff treats it as a reset.
const MaxPlausiblePowerW = 5000.0

// Diff is what the GPUs did between two snapshots of them (the prolog's
// and the epilog's, or the prolog's and now), one GPUResult per GPU, and
// the total over them. GPUs are matched by UUID, in start's order, then
// end's for those at the end only; a GPU at one end only, or whose
// counters could not be read at either end, has Error set and no figures.
// shared says, by UUID, why a GPU's figures are not the job's alone
// (Record.Shared).
//
// A counter absent at either end is Missing, one that went backwards is
// Reset: neither is ever zero. When the driver was reloaded between the
// snapshots (the driver version or the boot id differ, or a GPU's energy
// counter went backwards or jumped), every counter that counts from the
// driver's load is Reset on that GPU; the remapped rows, which the GPU
// keeps, still count.
func Diff(start, end Snapshot, shared map[string][]string) ([]GPUResult, *Total) {
	wall := end.Time.Sub(start.Time).Seconds()
	reload := reloadReason(start, end)
	ends := map[string]GPUSnapshot{}
	for _, g := range end.GPUs {
		ends[g.UUID] = g
	}
	seen := map[string]bool{}
	var out []GPUResult
	for _, s := range start.GPUs {
		if seen[s.UUID] {
			continue
		}
		seen[s.UUID] = true
		r := oneEnd(s, wall, "at the start only: not in the end snapshot")
		if e, ok := ends[s.UUID]; ok {
			r = diffGPU(s, e, wall, reload)
		}
		out = append(out, attribute(r, shared))
	}
	for _, e := range end.GPUs {
		if !seen[e.UUID] {
			seen[e.UUID] = true
			out = append(out, attribute(oneEnd(e, wall, "at the end only: not in the start snapshot"), shared))
		}
	}
	return out, sumTotal(out, wall)
}

// reloadReason says why the driver is taken to have been reloaded between
// the snapshots of all the GPUs ("" when nothing says so).
func reloadReason(start, end Snapshot) string {
	switch {
	case start.Driver != "" && end.Driver != "" && start.Driver != end.Driver:
		return fmt.Sprintf("driver %s -> %s", start.Driver, end.Driver)
	case start.BootID != "" && end.BootID != "" && start.BootID != end.BootID:
		return "node rebooted (boot id changed)"
	}
	return ""
}

// oneEnd is the result of a GPU with no figures: it is in one snapshot
// only, or its counters could not be read.
func oneEnd(g GPUSnapshot, wall float64, why string) GPUResult {
	return GPUResult{UUID: g.UUID, BusID: g.BusID, Index: g.Index, Name: g.Name, Seconds: wall, Error: why}
}

// attribute marks r not attributable to the job when shared lists why.
func attribute(r GPUResult, shared map[string][]string) GPUResult {
	why := shared[r.UUID]
	r.Attributable = len(why) == 0
	r.SharedWhy = slices.Clone(why)
	return r
}

// countsFromLoad says whether counter c restarts when the driver is
// loaded: every counter but the remapped rows, which the GPU keeps.
func countsFromLoad(c gpu.Counter) bool {
	return c != gpu.RemappedCorrect && c != gpu.RemappedUncorrect
}
