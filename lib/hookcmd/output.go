package hookcmd

import (
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/hook"
)

// logOutcome logs what a run did: warnings, skipped knobs, drift, and one
// line for a run that succeeded (a failure is logged where it is printed:
// run's fail).
func logOutcome(log *slog.Logger, out *hook.Outcome, err error) {
	if out == nil {
		return
	}
	for _, w := range out.Warnings {
		log.Warn(w.Text)
	}
	for _, m := range out.MIG {
		if m.Reconfigure == "reconfigured" {
			log.Warn("MIG layout reconfigured and read back", "gpu", m.GPU, "bus_id", m.BusID, "was", m.Was, "now", m.Found)
		}
	}
	if out.Health != nil {
		log.Info("health checks", "op", out.Op, "summary", out.Health.Summary())
	}
	for _, s := range out.Skipped {
		log.Info("knob skipped", "knob", s.ID.String(), "reason", s.Reason)
	}
	for _, d := range out.Drift {
		attrs := []any{"knob", d.ID.String(), "kind", d.Kind, "expected", string(d.Expected), "found", string(d.Found)}
		if d.Job != "" {
			attrs = append(attrs, "dead_job", d.Job)
		}
		log.Warn("drift", attrs...)
	}
	verb := "applied"
	if out.Op == "epilog" {
		verb = "restored"
	}
	if out.DryRun {
		verb = "would change"
	}
	if err != nil {
		return
	}
	log.Info(out.Op+" done", "profile", out.Profile, verb, out.Summary())
}

// printOutcome prints a run's outcome for --dry-run and --json: JSON, else
// the plan table.
func printOutcome(w io.Writer, out *hook.Outcome, asJSON bool) {
	if out == nil {
		return
	}
	if asJSON {
		cli.WriteJSON(w, out)
		return
	}
	writePlanTable(w, out)
}

// writePlanTable prints a run's plan for --dry-run: what would change, what
// the job would hold, what is skipped and why.
func writePlanTable(w io.Writer, out *hook.Outcome) {
	mode := ""
	if out.DryRun {
		mode = "; dry run: nothing changed"
	}
	fmt.Fprintf(w, "%s for job %s, %s%s\n", out.Op, out.Job, profileText(out.Profile, out.Source), mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tSCOPE\tNOW\tTO\tWHY")
	for _, c := range out.Changes {
		req := ""
		if c.Required {
			req = " (required)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", c.ID.Name, c.ID.Scope, hook.ShowValue(c.From), hook.ShowValue(c.To), c.Why, req)
	}
	changing := map[string]bool{}
	for _, c := range out.Changes {
		changing[c.ID.String()] = true
	}
	for _, h := range out.Holds {
		if !changing[h.ID.String()] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.ID.Name, h.ID.Scope, hook.ShowValue(h.Expected), "-", "already set")
		}
	}
	for _, s := range out.Skipped {
		fmt.Fprintf(tw, "%s\t%s\t-\t-\tskipped: %s\n", s.ID.Name, s.ID.Scope, s.Reason)
	}
	for _, d := range out.Drift {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%s: expected %s\n", d.ID.Name, d.ID.Scope, hook.ShowValue(d.Found), d.Kind, hook.ShowValue(d.Expected))
	}
	tw.Flush()
	if out.Health != nil {
		fmt.Fprintln(w, "health: "+out.Health.Summary())
		for _, r := range out.Health.Results {
			if r.Status == "fail" {
				fmt.Fprintf(w, "health: %s (%s): %s\n", r.Check, r.Severity, r.Reason)
			}
		}
	}
	for _, m := range out.MIG {
		fmt.Fprintln(w, describeMIGCheck(m))
	}
	if len(out.MIGGres) > 0 {
		fmt.Fprintln(w, "gres.conf Slurm now needs (restart slurmd after writing it):")
		for _, l := range out.MIGGres {
			fmt.Fprintln(w, "  "+l)
		}
	}
	for _, r := range out.Released {
		fmt.Fprintln(w, describeReleased(r, out.DryRun))
	}
	for _, wn := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	for _, n := range out.Notices {
		fmt.Fprintf(w, "notice for the job's user: %s\n", n)
	}
}

// profileText names the run's profile and where it came from
// (hook.Outcome's Source, a config.Source): "profile gpu (selection.
// default_profile)", "profile benchmark (the job's constraints)"; the
// epilog, which does not keep the source, names the profile alone.
func profileText(profile, source string) string {
	if profile == "" {
		return "no profile"
	}
	switch config.Source(source) {
	case "":
		return "profile " + profile
	case config.FromDefault:
		return "profile " + profile + " (selection.default_profile)"
	case config.FromConstraint:
		return "profile " + profile + " (the job's constraints)"
	case config.FromComment:
		return "profile " + profile + " (the job's comment)"
	}
	return "profile " + profile + " (" + source + ")"
}

// describeReleased is one line for a released dead job ("would release"
// in a dry run).
func describeReleased(r hook.Released, dryRun bool) string {
	verb := "released"
	if dryRun {
		verb = "would release"
	}
	line := fmt.Sprintf("%s job %s: %s", verb, r.Job, r.Reason)
	for _, c := range r.Restored {
		line += fmt.Sprintf("\n  %s@%s %s -> %s", c.ID.Name, c.ID.Scope, hook.ShowValue(c.From), hook.ShowValue(c.To))
	}
	return line
}

// describeMIGCheck is one line for the MIG layout check of a GPU.
func describeMIGCheck(m hook.MIGCheck) string {
	switch m.Reconfigure {
	case "would reconfigure":
		return fmt.Sprintf("mig: GPU %d (%s) would reconfigure: %s -> %s", m.GPU, m.BusID, m.Found, m.Want)
	case "reconfigured":
		return fmt.Sprintf("mig: GPU %d (%s) reconfigured: %s -> %s (read back)", m.GPU, m.BusID, m.Was, m.Found)
	}
	if !m.OK {
		return "mig: " + m.Reason
	}
	s := fmt.Sprintf("mig: GPU %d (%s) ok: %s", m.GPU, m.BusID, m.Want)
	if m.ProfilesUnverified {
		s += " (mode and device count; profiles not verified)"
	}
	return s
}
