package hook

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// writePlanTable prints a run's plan for --dry-run: what would change, what
// the job would hold, what is skipped and why.
func writePlanTable(w io.Writer, out *Outcome) {
	mode := ""
	if out.DryRun {
		mode = " (dry run: nothing changed)"
	}
	fmt.Fprintf(w, "%s for job %s, profile %s (%s)%s\n", out.Op, out.Job, orDash(out.Profile), orDash(out.Source), mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tSCOPE\tNOW\tTO\tWHY")
	for _, c := range out.Changes {
		req := ""
		if c.Required {
			req = " (required)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", c.ID.Name, c.ID.Scope, c.From, c.To, c.Why, req)
	}
	changing := map[string]bool{}
	for _, c := range out.Changes {
		changing[c.ID.String()] = true
	}
	for _, h := range out.Holds {
		if !changing[h.ID.String()] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.ID.Name, h.ID.Scope, h.Expected, "-", "already set")
		}
	}
	for _, s := range out.Skipped {
		fmt.Fprintf(tw, "%s\t%s\t-\t-\tskipped: %s\n", s.ID.Name, s.ID.Scope, s.Reason)
	}
	for _, d := range out.Drift {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%s: expected %s\n", d.ID.Name, d.ID.Scope, d.Found, d.Kind, d.Expected)
	}
	tw.Flush()
	for _, r := range out.Released {
		fmt.Fprintln(w, describeReleased(r, out.DryRun))
	}
	for _, wn := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
