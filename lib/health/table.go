package health

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"gpuprep/lib/plural"
)

// WriteTable prints a report for a person, as `gpuprep-prolog --health`
// and gpuprep-health do: a header line, one row per check and scope, then
// each GPU's Xid history.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "health (read-only): GPU backend %s, %d GPUs, %s\n", r.Backend, r.GPUs, r.Summary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSCOPE\tSTATUS\tDETAIL")
	for _, res := range r.Results {
		status := string(res.Status)
		if res.Severity != "" {
			status += " (" + res.Severity + ")"
		}
		detail := res.Value
		if res.Reason != "" {
			detail = res.CodedReason() // a failure's code and action first
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.Check, res.Scope, status, detail)
	}
	tw.Flush()
	for _, bus := range slices.Sorted(maps.Keys(r.History)) {
		for _, x := range r.History[bus] {
			fmt.Fprintf(w, "XID history %s: Xid %d (%s), %s, seq %d to %d, last: %s\n", bus, x.Code, x.Severity, plural.Count(int(x.Count), "time", "times"), x.FirstSeq, x.LastSeq, x.Text)
		}
	}
}
