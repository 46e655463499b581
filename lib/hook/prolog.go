package hook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Outcome is what a run did, for the log, --dry-run and --json.
type Outcome struct {
	Op       string        `json:"op"`
	Job      string        `json:"job"`
	Profile  string        `json:"profile,omitempty"`
	Source   string        `json:"profile_source,omitempty"`
	DryRun   bool          `json:"dry_run"`
	Changes  []plan.Change `json:"changes"`
	Holds    []plan.Hold   `json:"holds,omitempty"`
	Skipped  []plan.Skip   `json:"skipped,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	Drift    []DriftFound  `json:"drift,omitempty"`
}

// DriftFound is a knob whose value changed under the job.
type DriftFound struct {
	ID       knob.ID    `json:"id"`
	Kind     string     `json:"kind"` // "drift" or "invariant"
	Expected knob.Value `json:"expected"`
	Found    knob.Value `json:"found"`
}

// Prolog applies the job's profile: select it, recover an interrupted run,
// read every knob the profile sets, plan, journal, apply, and record what
// the job holds for its epilog. With DryRun it plans and changes nothing.
func Prolog(ctx context.Context, o *Options) (*Outcome, error) {
	sel := config.Select(o.Config, config.SelectorFromEnv(func(k string) string {
		switch k {
		case "SLURM_JOB_CONSTRAINTS":
			return o.Job.Constraints
		case "SLURM_JOB_COMMENT":
			return o.Job.Comment
		}
		return ""
	}))
	out := &Outcome{Op: "prolog", Job: jobKey(o.Job), Profile: sel.Profile, Source: string(sel.Source), DryRun: o.DryRun, Warnings: sel.Warnings}
	prof, err := o.Config.Profile(sel.Profile)
	if err != nil {
		return out, fmt.Errorf("profile %q: %w", sel.Profile, err)
	}
	all := allGPUs(o)
	gpus, err := jobGPUs(all, o.Job.GPUs)
	if err != nil {
		return out, nodeErrorf("%v", err)
	}
	if !o.DryRun {
		if err := recoverInterrupted(ctx, o); err != nil {
			return out, err
		}
	}
	st, err := loadNode(o.Spool)
	if err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	dropStale(o, &st, out.Job)
	knobs := catalog(o, gpus)
	obs := observe(knobs, prof)
	p := plan.ForJob(out.Job, obs, st)
	out.Changes, out.Holds, out.Skipped = p.Changes, p.Holds, p.Skipped
	out.Warnings = append(out.Warnings, p.Warnings...)
	if s, failed := p.Failed(); failed {
		return out, nodeErrorf("required knob %s", about(s.ID, errors.New(s.Reason)))
	}
	if o.DryRun {
		return out, nil
	}
	if err := checkDeadline(ctx, "applying the profile"); err != nil {
		return out, err
	}
	before, err := loadJob(o.Spool, out.Job)
	if err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	rec := &JobRecord{Job: out.Job, User: o.Job.User, Profile: sel.Profile, Started: o.now(), Holds: p.Holds, Invariants: invariants(knobs, prof)}
	for _, g := range gpus {
		rec.GPUs = append(rec.GPUs, g.UUID)
	}
	if len(p.Changes) == 0 {
		// Nothing to write to the node: no journal needed. The node state
		// goes first; if the run dies before the job record, the holders it
		// names are stale and the next run drops them (dropStale).
		if before != nil && reflect.DeepEqual(before.Holds, rec.Holds) && reflect.DeepEqual(st, p.State) {
			return out, nil // the same job's prolog again: nothing at all to do
		}
		if err := o.Spool.WriteJSON(nodeFile, p.State); err != nil {
			return out, nodeErrorf("spool: %v", err)
		}
		crashPoint()
		if err := o.Spool.WriteJSON(jobFile(out.Job), rec); err != nil {
			return out, nodeErrorf("spool: %v", err)
		}
		return out, nil
	}
	if err := writeJournal(o.Spool, &Journal{Op: "prolog", Job: out.Job, Started: o.now(), Changes: p.Changes, NodeBefore: st, JobBefore: before}); err != nil {
		return out, nodeErrorf("%v", err)
	}
	done, warns, err := apply(o, knobs, p.Changes)
	if err != nil {
		_ = o.Spool.Remove(journalFile) // apply undid its own work
		return out, err
	}
	out.Changes = done
	out.Warnings = append(out.Warnings, warns...)
	dropFailed(p, st, p.Changes, done)
	out.Holds = p.Holds
	rec.Holds = p.Holds
	if err := commit(o.Spool, p.State, out.Job, rec); err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	return out, nil
}

// observe reads every knob the profile sets and what the profile wants of it.
func observe(knobs map[string]knob.Knob, prof config.Profile) []plan.Observed {
	var obs []plan.Observed
	for _, k := range knobs {
		id := k.ID()
		setting, ok := knob.Setting(prof.Knobs, id.Name)
		if !ok {
			continue
		}
		o := plan.Observed{ID: id, Required: prof.IsRequired(id.Name)}
		d, derr := k.Desired(setting)
		switch {
		case errors.Is(derr, knob.ErrLeaveAlone):
			continue
		case derr != nil:
			o.DesiredErr = derr
		default:
			o.Desired, o.HasDesired = d, true
		}
		o.Current, o.Err = k.Read()
		obs = append(obs, o)
	}
	return obs
}

// invariants lists the values the config says must hold through the job
// (for example persistence stays on), checked by the epilog.
func invariants(knobs map[string]knob.Knob, prof config.Profile) []plan.Hold {
	var out []plan.Hold
	for _, k := range knobs {
		setting, ok := knob.Setting(prof.Invariants, k.ID().Name)
		if !ok {
			continue
		}
		if v, err := k.Desired(setting); err == nil {
			out = append(out, plan.Hold{ID: k.ID(), Expected: v})
		}
	}
	return out
}

// dropFailed removes optional changes that failed from what the job holds.
func dropFailed(p *plan.Plan, before plan.NodeState, planned, done []plan.Change) {
	ok := map[string]bool{}
	for _, c := range done {
		ok[c.ID.String()] = true
	}
	for _, c := range planned {
		key := c.ID.String()
		if ok[key] {
			continue
		}
		if h, had := before.Holders[key]; had {
			p.State.Holders[key] = h
		} else {
			delete(p.State.Holders, key)
		}
		var holds []plan.Hold
		for _, h := range p.Holds {
			if h.ID.String() != key {
				holds = append(holds, h)
			}
		}
		p.Holds = holds
	}
}

// Summary is one line for the log: what changed.
func (out *Outcome) Summary() string {
	var parts []string
	for _, c := range out.Changes {
		parts = append(parts, fmt.Sprintf("%s %s->%s", c.ID, c.From, c.To))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}
