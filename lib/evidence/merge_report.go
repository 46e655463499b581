package evidence

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"gpuprep/lib/drift"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
)

// WriteJobView writes a job's evidence over its nodes: one line a node
// with its totals, then the job's totals, the notes that explain unknown
// figures and shared GPUs, and what the user can act on, node by node. A
// job of one node gets that node's WriteReport.
func WriteJobView(w io.Writer, v JobView) error {
	if len(v.Parts) == 1 {
		return WriteReport(w, v.Parts[0])
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	var nodes, notes, advice []string
	var gs []GPUResult
	for _, p := range v.Parts {
		nodes = append(nodes, p.Job.Node)
		gs = append(gs, p.GPUs...)
		notes = append(notes, partNotes(p)...)
		for _, a := range Advice(p.GPUs) {
			advice = append(advice, drift.Show(p.Job.Node)+" "+a)
		}
	}
	user := ""
	if len(v.Parts) > 0 {
		user = v.Parts[0].Job.User
	}
	fmt.Fprintf(tw, "Job %s of %s on %s (%s)\n", drift.Show(v.Job), drift.Show(user),
		plural.Count(len(v.Parts), "node", "nodes"), drift.Show(slurm.CompactHostlist(nodes)))
	fmt.Fprintf(tw, "NODE\tGPUS\tSTART\tDURATION\t%s\n", strings.Join(figureHeads(), "\t"))
	for _, p := range v.Parts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", drift.Show(p.Job.Node), len(p.GPUs), stamp(p.Start.Time), partFigures(p))
	}
	if v.Total != nil {
		fmt.Fprintf(tw, "job\t%d\t\t%s\t%s\n", v.Total.GPUs, seconds(v.Total.Seconds), strings.Join(totalCells(v.Total, errorsPartial(gs)), "\t"))
		for _, u := range v.Total.Unknown {
			notes = append(notes, "total: unknown "+u)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(tw, "  %s\n", oneLine(n))
	}
	writeLines(tw, "What you can do", advice, "")
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("job evidence report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write job evidence report: %w", err)
	}
	return nil
}

// partFigures are a part's duration and its total's cells, tab separated.
func partFigures(p Record) string {
	if p.Total == nil {
		return "running (no figures yet)"
	}
	d := seconds(p.Total.Seconds)
	if p.Running {
		d += " so far"
	}
	return d + "\t" + strings.Join(totalCells(p.Total, errorsPartial(p.GPUs)), "\t")
}

// partNotes are the notes of a part's GPUs, each led by the node (the
// job's total names the GPUs that made a figure unknown).
func partNotes(p Record) []string {
	var out []string
	for _, g := range p.GPUs {
		for _, n := range gpuNotes(g) {
			out = append(out, drift.Show(p.Job.Node)+" "+n)
		}
	}
	return out
}

// seconds is s seconds as a duration to the second ("1h0m0s").
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
