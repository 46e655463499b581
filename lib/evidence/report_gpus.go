package evidence

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
)

// writeGPUs writes the table of r's GPUs and their total, then the notes
// that explain its unknown figures and its shared GPUs.
func writeGPUs(w io.Writer, r Record) {
	if len(r.GPUs) == 0 {
		if r.End == nil {
			fmt.Fprintln(w, "\nGPUs: no figures yet (no end snapshot)")
		} else {
			fmt.Fprintln(w, "\nGPUs: none")
		}
		return
	}
	fmt.Fprintf(w, "\nGPUs (%d):\n", len(r.GPUs))
	fmt.Fprintf(w, "GPU\tBUS ID\t%s\n", strings.Join(figureHeads(), "\t"))
	var notes []string
	for _, g := range r.GPUs {
		fmt.Fprintf(w, "%d\t%s\t%s\n", g.Index, drift.Show(g.BusID), strings.Join(gpuCells(g), "\t"))
		notes = append(notes, gpuNotes(g)...)
	}
	if r.Total != nil {
		fmt.Fprintf(w, "total\t%s\t%s\n", gpusWord(r.Total.GPUs), strings.Join(totalCells(r.Total, errorsPartial(r.GPUs)), "\t"))
		for _, u := range r.Total.Unknown {
			notes = append(notes, "total: unknown "+u)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  %s\n", oneLine(n))
	}
}

// gpuNotes are the lines under the table about GPU g: why it has no
// figures, why they are not the job's alone, what is unknown and why.
func gpuNotes(g GPUResult) []string {
	name := fmt.Sprintf("GPU %d", g.Index)
	var notes []string
	if g.Error != "" {
		notes = append(notes, name+": no figures: "+g.Error)
	}
	if !g.Attributable {
		notes = append(notes, name+": not attributable to the job: "+strings.Join(g.SharedWhy, "; "))
	}
	if g.DriverReloaded != "" {
		notes = append(notes, name+": driver reloaded ("+g.DriverReloaded+
			"): its counters restarted, so every figure but the remapped rows is unknown")
	}
	if len(g.Missing) > 0 {
		notes = append(notes, name+": missing (the GPU or its driver does not count them): "+labels(g.Missing))
	}
	var back []gpu.Counter
	for _, c := range g.Reset {
		if g.DriverReloaded == "" || !countsFromLoad(c) {
			back = append(back, c)
		}
	}
	if len(back) > 0 {
		notes = append(notes, name+": went backwards (reset, unknown): "+labels(back))
	}
	return notes
}

// labels is the counters' labels, comma separated.
func labels(cs []gpu.Counter) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = CounterLabel(c)
	}
	return strings.Join(s, ", ")
}

// writeProcessTable writes the job's processes (NVML's accounting mode);
// nothing when there are none.
func writeProcessTable(w io.Writer, r Record) {
	if len(r.Processes) == 0 {
		return
	}
	index := map[string]string{}
	for _, g := range r.Start.GPUs {
		index[g.UUID] = strconv.Itoa(g.Index)
	}
	fmt.Fprintf(w, "\nProcesses (%d):\n", len(r.Processes))
	fmt.Fprintln(w, "PID\tGPU\tSECONDS\tGPU UTIL\tMEMORY UTIL\tPEAK MEMORY")
	for _, p := range r.Processes {
		gpuName, ok := index[p.GPU]
		if !ok {
			gpuName = drift.Show(p.GPU)
		}
		fmt.Fprintf(w, "%d\t%s\t%.0f\t%d%%\t%d%%\t%.1f GiB\n", p.PID, gpuName, p.Seconds,
			p.GPUUtilPct, p.MemoryUtilPct, float64(p.MaxMemoryBytes)/(1<<30))
	}
}
