package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"gpuprep/lib/drift"
	"gpuprep/lib/plural"
)

// WriteReport writes r for the job's user: who, where and when; the
// settings the prolog applied and what drifted under the job; per GPU its
// energy, mean power, the share of the time each clock-event reason held
// it down and the errors that grew, then the totals; the Xids, the
// processes and the warnings; last, one line per thing the user can act
// on. A figure that is not known reads "unknown (why)", never 0.
func WriteReport(w io.Writer, r Record) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	writeHeader(tw, r)
	writeSettings(tw, r.Settings)
	writeDrift(tw, r.Drift)
	writeGPUs(tw, r)
	writeLines(tw, "Xids", r.Xids, "Xids: none")
	writeProcessTable(tw, r)
	writeLines(tw, "Warnings", r.Warnings, "")
	writeAdvice(tw, r.GPUs)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("evidence report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write evidence report: %w", err)
	}
	return nil
}

// WriteReportJSON writes r as one indented JSON document.
func WriteReportJSON(w io.Writer, r Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write evidence report: %w", err)
	}
	return nil
}

// writeHeader writes the job, its user, node and profile, and when it
// started, ended and how long it ran.
func writeHeader(w io.Writer, r Record) {
	fmt.Fprintf(w, "Job %s of %s on %s\n", drift.Show(r.Job.ID), drift.Show(r.Job.User), drift.Show(r.Job.Node))
	profile := r.Job.Profile
	if profile == "" {
		profile = "(none)"
	}
	fmt.Fprintf(w, "  profile:\t%s\n", drift.Show(profile))
	fmt.Fprintf(w, "  start:\t%s\n", stamp(r.Start.Time))
	switch {
	case r.End == nil && r.Running:
		fmt.Fprintf(w, "  end:\trunning (no figures yet)\n")
	case r.End == nil:
		fmt.Fprintf(w, "  end:\tunknown (no end snapshot)\n")
	case r.Running:
		fmt.Fprintf(w, "  end:\trunning, so far (%s)\n", stamp(r.End.Time))
		fmt.Fprintf(w, "  duration:\t%s so far\n", duration(r.Start.Time, r.End.Time))
	default:
		fmt.Fprintf(w, "  end:\t%s\n", stamp(r.End.Time))
		fmt.Fprintf(w, "  duration:\t%s\n", duration(r.Start.Time, r.End.Time))
	}
}

// stamp is t as every report of the repo shows a time.
func stamp(t time.Time) string {
	return t.UTC().Format(drift.TimeFormat)
}

// duration is the time from start to end, to the second.
func duration(start, end time.Time) string {
	return end.Sub(start).Round(time.Second).String()
}

// writeSettings writes the knobs the prolog set for the job.
func writeSettings(w io.Writer, settings []Setting) {
	if len(settings) == 0 {
		fmt.Fprintln(w, "\nSettings applied: none")
		return
	}
	fmt.Fprintf(w, "\nSettings applied (%d):\n", len(settings))
	for _, s := range settings {
		fmt.Fprintf(w, "  %s\t%s\n", drift.Show(s.Knob), drift.Show(s.Value))
	}
}

// writeDrift writes what drifted under the job.
func writeDrift(w io.Writer, lines []string) {
	writeLines(w, "What drifted under the job", lines, "Drift: nothing drifted")
}

// writeLines writes lines under title, one a line; none when there are
// none, unless none is set.
func writeLines(w io.Writer, title string, lines []string, none string) {
	if len(lines) == 0 {
		if none != "" {
			fmt.Fprintf(w, "\n%s\n", none)
		}
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", oneLine(l))
	}
}

// oneLine is s with its line breaks, tabs and other control characters
// turned into spaces, so that a note of the node's stays on one line of
// the report and cannot drive the terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
}

// gpusWord is "1 GPU" or "n GPUs".
func gpusWord(n int) string {
	return plural.Count(n, "GPU", "GPUs")
}
