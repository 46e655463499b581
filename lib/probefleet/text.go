package probefleet

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"gpuprep/lib/plural"
	"gpuprep/lib/textfmt"
)

// WriteText writes r for a person: the flagged GPUs, worst (furthest
// below their median) first, and the nodes they are on; the verdicts that
// failed on their node and those that were forced; then each model's
// fleet, metric by metric.
func WriteText(w io.Writer, r Report) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Probe verdicts of %s, %s. A GPU is flagged when a value is below its model's fleet median\n"+
		"by more than %g%% and by more than %g x 1.4826 x MAD (robust z below -%g; the margin alone when the MAD is 0).\n",
		plural.Count(r.Nodes, "node", "nodes"), plural.Count(r.GPUs, "GPU", "GPUs"), r.Margin*100, r.K, r.K)
	writeFlags(tw, r)
	writeVerdicts(tw, "Verdicts failed on their node", r.Failed)
	writeVerdicts(tw, "Forced verdicts (run on busy GPUs: values neither in the medians nor judged)", r.Forced)
	writeModels(tw, r.Models)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("probe fleet report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write probe fleet report: %w", err)
	}
	return nil
}

// writeFlags writes the flagged GPUs, worst first, and their nodes.
func writeFlags(w io.Writer, r Report) {
	if len(r.Flags) == 0 {
		fmt.Fprintf(w, "\nFlagged GPUs: none\n")
		return
	}
	fmt.Fprintf(w, "\nFlagged GPUs: %s on %s, worst first\n",
		plural.Count(len(r.Flags), "flag", "flags"), plural.Count(len(r.FlaggedNodes), "node", "nodes"))
	fmt.Fprintln(w, "NODE\tGPU\tBUS ID\tMODEL\tMETRIC\tVALUE\tMEDIAN\tBELOW\tROBUST Z")
	flags := slices.Clone(r.Flags)
	slices.SortStableFunc(flags, func(a, b Flag) int {
		return cmp.Or(cmp.Compare(b.BelowPct, a.BelowPct), compareFlags(a, b))
	})
	for _, f := range flags {
		z := "-" // MAD 0: the margin alone decided
		if f.RobustZ != nil {
			z = fmt.Sprintf("%.1f", *f.RobustZ)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f%%\t%s\n",
			show(f.Node), f.GPU, f.BusID, f.Model, f.Metric, f.Value, f.Median, f.BelowPct, z)
	}
	fmt.Fprintln(w, "\nFlagged nodes:")
	for _, n := range r.FlaggedNodes {
		fmt.Fprintf(w, "  %s\t%s %s\t%s\n", show(n.Node), plural.Word(len(n.GPUs), "GPU", "GPUs"),
			textfmt.JoinInts(n.GPUs, ","), strings.Join(n.Metrics, ", "))
	}
}

// writeVerdicts writes a list of nodes' own verdicts under title; nothing
// when there are none.
func writeVerdicts(w io.Writer, title string, vs []NodeVerdict) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d\n", title, len(vs))
	fmt.Fprintln(w, "NODE\tTIME\tVERDICT\tCODES")
	for _, v := range vs {
		verdict := "pass"
		if !v.Pass {
			verdict = "fail"
		}
		if v.Forced {
			verdict += ", forced"
		}
		codes := strings.Join(v.Codes, ",")
		if codes == "" {
			codes = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", show(v.Node), stamp(v.Time), verdict, codes)
	}
}

// writeModels writes each model's fleet summary.
func writeModels(w io.Writer, models []Model) {
	for _, m := range models {
		fmt.Fprintf(w, "\n%s: %s on %s\n", m.Model, plural.Count(m.GPUs, "GPU", "GPUs"), plural.Count(m.Nodes, "node", "nodes"))
		fmt.Fprintln(w, "  METRIC\tN\tMEDIAN\tMAD\tP10\tP90\tFLAGGED")
		for _, s := range m.Metrics {
			if s.Note != "" {
				fmt.Fprintf(w, "  %s\t%d\t%s\n", s.Metric, s.N, s.Note)
				continue
			}
			fmt.Fprintf(w, "  %s\t%d\t%.1f\t%.2f\t%.1f\t%.1f\t%d\n", s.Metric, s.N, s.Median, s.MAD, s.P10, s.P90, s.Flagged)
		}
	}
}
