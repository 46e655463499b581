package hook

import (
	"slices"

	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Knobs kept part by part (knob.Rebaser: housekeeping_cpus, one cpuset per
// service cgroup) read as a summed-up value, and plan records that as the
// baseline and a change's From. Putting one back with it would write the
// parts that appeared since (a service started during the job, with its own
// AllowedCPUs=). rebaseProlog and narrowRestores make what is journaled
// name each part instead.

// rebaseProlog replaces, for each change of a prolog's plan to a Rebaser
// knob, the baseline the plan keeps with one naming each part the change
// writes (added to the baseline recorded before, st), and sets the
// change's Undo. A change that puts such a knob back (a job's prolog run
// again, letting go) is narrowed as a release's is. Where a knob cannot
// be read part by part the plan is kept as it is, with a warning.
func rebaseProlog(knobs map[string]knob.Knob, st plan.NodeState, p *plan.Plan) {
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		key := c.ID.String()
		r, ok := knobs[key].(knob.Rebaser)
		var held *knob.Value
		if h := st.Holders[key]; len(h.Jobs) > 0 {
			held = &h.Value
		}
		switch {
		case !ok:
		case c.Why == whyRestore:
			if held != nil && narrowRestore(r, &c, *held, &p.Warnings) {
				continue
			}
		default:
			rebase(r, &c, st, held, p)
		}
		kept = append(kept, c)
	}
	p.Changes = kept
}

// rebase sets the baseline p keeps for c's knob and c's Undo.
func rebase(r knob.Rebaser, c *plan.Change, st plan.NodeState, held *knob.Value, p *plan.Plan) {
	key := c.ID.String()
	var recorded *knob.Value
	if v, ok := st.Baseline[key]; ok {
		recorded = &v
	} else if held != nil {
		return // baseline lost while held: [defaults] at the release
	}
	base, undo, err := r.Rebase(c.To, recorded, held)
	if err != nil {
		p.Warnings = append(p.Warnings, about(c.ID, err)+" (its baseline kept as read)")
		return
	}
	p.State.Baseline[key], c.Undo = base, undo
}

// whyRestore is plan.Change.Why of a change that puts a knob back.
const whyRestore = "restore"

// narrowRestores narrows each change of a release that puts a Rebaser knob
// back to the parts that value may write while the job's hold (holds) is
// in force; a change left with none is dropped.
func narrowRestores(knobs map[string]knob.Knob, holds []plan.Hold, p *plan.Plan) {
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		if r, ok := knobs[c.ID.String()].(knob.Rebaser); ok {
			i := slices.IndexFunc(holds, func(h plan.Hold) bool { return h.ID == c.ID })
			if i >= 0 && narrowRestore(r, &c, holds[i].Expected, &p.Warnings) {
				continue
			}
		}
		kept = append(kept, c)
	}
	p.Changes = kept
}

// narrowRestore sets c.To to what it may write while held is in force
// (knob.Rebaser's Restoring); drop says it writes nothing. A knob that
// cannot be read keeps c as it is, with a warning.
func narrowRestore(r knob.Rebaser, c *plan.Change, held knob.Value, warnings *[]string) (drop bool) {
	v, write, err := r.Restoring(c.To, held)
	if err != nil {
		*warnings = append(*warnings, about(c.ID, err)+" (restored as journaled)")
		return false
	}
	c.To = v
	return !write
}

// undoValue is what undoing c writes.
func undoValue(c plan.Change) knob.Value {
	if c.Undo != "" {
		return c.Undo
	}
	return c.From
}
