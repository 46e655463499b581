package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
)

// RecentLimit is how many records WriteReport lists after the summary.
const RecentLimit = 50

// TimeFormat is how a report shows a time: UTC to the second, the same on
// every node's report (the fleet report's too, lib/fleet).
const TimeFormat = "2006-01-02 15:04:05Z"

// WriteReport prints the drift history for whoever is on call: a summary
// with one row per kind, knob and scope (count, last seen, nodes), most
// frequent first, then the newest RecentLimit records, newest first.
func WriteReport(w io.Writer, recs []Record) error {
	if len(recs) == 0 {
		_, err := fmt.Fprintln(w, "no drift recorded")
		return err
	}
	groups := Summarize(recs)
	nodes := map[string]bool{}
	for _, r := range recs {
		nodes[r.Node] = true
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SUMMARY: %s, %s, %s\n", plural.Count(len(recs), "record", "records"),
		plural.Count(len(groups), "knob/scope pair", "knob/scope pairs"), plural.Count(len(nodes), "node", "nodes"))
	fmt.Fprintln(tw, "KNOB\tSCOPE\tKIND\tCOUNT\tLAST SEEN\tNODES")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", Show(g.Knob), Show(g.Scope), Show(g.Kind),
			g.Count, g.LastSeen.UTC().Format(TimeFormat), Show(slurm.CompactHostlist(g.Nodes)))
	}
	recent := newestFirst(recs)
	title := "RECENT (newest first)"
	if len(recent) > RecentLimit {
		title = fmt.Sprintf("RECENT (newest %d of %d; --json lists all)", RecentLimit, len(recent))
		recent = recent[:RecentLimit]
	}
	fmt.Fprintf(tw, "\n%s\n", title)
	fmt.Fprintln(tw, "TIME\tNODE\tJOB\tUSER\tKNOB\tSCOPE\tEXPECTED → FOUND")
	for _, r := range recent {
		mark := ""
		if r.Kind == KindInvariant {
			mark = " (invariant)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s → %s%s\n", r.Time.UTC().Format(TimeFormat),
			Show(r.Node), Show(r.Job), Show(r.User), Show(r.Knob), Show(r.Scope),
			Show(r.Expected), Show(r.Found), mark)
	}
	return tw.Flush()
}

// Report is WriteReportJSON's document.
type Report struct {
	Summary []Group  `json:"summary"`
	Records []Record `json:"records"` // oldest first
}

// WriteReportJSON writes the summary and every record (oldest first) as one
// indented JSON document.
func WriteReportJSON(w io.Writer, recs []Record) error {
	all := newestFirst(recs)
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	rep := Report{Summary: Summarize(recs), Records: all}
	if rep.Summary == nil {
		rep.Summary = []Group{}
	}
	if rep.Records == nil {
		rep.Records = []Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// newestFirst is a sorted copy; records of the same time keep file order
// reversed (the last written first).
func newestFirst(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[len(recs)-1-i] = r
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Time.After(out[b].Time) })
	return out
}

// Show makes a value safe and visible in a table: "" is shown as "(empty)",
// and anything with spaces, tabs or control characters is quoted (values come
// from kernel files and job metadata, not from us). The fleet report
// (lib/fleet) shows its values so too.
func Show(s string) string {
	if s == "" {
		return "(empty)"
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
