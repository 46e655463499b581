package hook

import (
	"fmt"
	"strings"

	"gpuprep/lib/evidence"
	"gpuprep/lib/health"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Outcome is what a run did, for the log, --dry-run and --json.
type Outcome struct {
	Op       string         `json:"op"`
	Job      string         `json:"job"`
	Profile  string         `json:"profile,omitempty"`
	Source   string         `json:"profile_source,omitempty"`
	DryRun   bool           `json:"dry_run"`
	Changes  []plan.Change  `json:"changes"`
	Holds    []plan.Hold    `json:"holds,omitempty"`
	Skipped  []plan.Skip    `json:"skipped,omitempty"`
	Warnings []plan.Warning `json:"warnings,omitempty"`
	Drift    []DriftFound   `json:"drift,omitempty"`
	// Released are other jobs let go of because they are over although
	// their epilog never ran.
	Released []Released `json:"released,omitempty"`
	// Fallback says why the job runs with another profile than it asked
	// for (selection.unfit_profile); "" when it got its own.
	Fallback string `json:"fallback,omitempty"`
	// FallbackFrom is the profile the job asked for when it fell back.
	FallbackFrom string `json:"fallback_from,omitempty"`
	// MIG is the [mig] layout check of each of the job's GPUs that
	// [mig.layout] names (prolog only).
	MIG []MIGCheck `json:"mig,omitempty"`
	// MIGGres is the gres.conf Slurm needs after [mig] reconfigure changed
	// a layout; slurmd must reload it.
	MIGGres []string `json:"mig_gres,omitempty"`
	// Health is the [health] checks' report (health.go).
	Health *health.Report `json:"health,omitempty"`
	// Notices are what the job's user is told by srunwrap (notices.go);
	// NodeDescription is the node description written for srunwrap, or
	// "unchanged" (nodedesc.go). Prolog only.
	Notices         []string `json:"notices,omitempty"`
	NodeDescription string   `json:"node_description,omitempty"`
	// Evidence is the job's evidence record written by this run
	// (<state_dir>/jobs/<name>), "" when none was.
	Evidence string `json:"evidence,omitempty"`
	// EvidenceRecord is the finished job's evidence the epilog wrote, for
	// the node's metrics; nil for a running job's.
	EvidenceRecord *evidence.Record `json:"-"`
}

// DriftFound is a knob whose value changed under the job.
type DriftFound struct {
	ID       knob.ID    `json:"id"`
	Kind     string     `json:"kind"` // "drift" or "invariant"
	Expected knob.Value `json:"expected"`
	Found    knob.Value `json:"found"`
	Job      string     `json:"job,omitempty"` // set for a dead job's drift
}

// warn adds a warning of kind for the log.
func (out *Outcome) warn(kind plan.WarningKind, format string, a ...any) {
	out.Warnings = append(out.Warnings, plan.Warn(kind, format, a...))
}

// tell adds a warning of kind the job's user is told too (srunwrap).
func (out *Outcome) tell(kind plan.WarningKind, format string, a ...any) {
	out.Warnings = append(out.Warnings, plan.Tell(kind, format, a...))
}

// warnAll adds each of texts as a warning of kind for the log.
func (out *Outcome) warnAll(kind plan.WarningKind, texts []string) {
	for _, t := range texts {
		out.warn(kind, "%s", t)
	}
}

// ShowValue is a knob value as people read it: "(none)" for the empty
// value (cstate_max_latency_us with no idle state disabled), which would
// print as nothing ("state3->"). JSON and the spool keep "".
func ShowValue[V ~string](v V) string {
	if v == "" {
		return "(none)"
	}
	return string(v)
}

// Summary is one line for the log: what changed.
func (out *Outcome) Summary() string {
	var parts []string
	for _, c := range out.Changes {
		parts = append(parts, fmt.Sprintf("%s %s->%s", c.ID, ShowValue(c.From), ShowValue(c.To)))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}
