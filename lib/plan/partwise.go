package plan

import "gpuprep/lib/knobval"

// A part-wise knob (Observed.Parts: housekeeping_cpus, one cpuset per
// service cgroup) is compared summed up, and that is what a plan records
// as a change's From and, where nothing is written, as the baseline.
// Putting it back with a summed-up value would write the parts that
// appeared since (a service started during the job, with its own
// AllowedCPUs=). So for such a knob the planner makes what is journaled
// name each part instead (knobval.Form's Rebase and Narrow).

// rebase sets, for a prolog's change c to a part-wise knob o, the baseline
// to keep (the one recorded before, in before, plus each part the change
// writes) and c's Undo. Where the knob's baseline is lost while jobs hold
// it, or a value does not parse, the plan keeps the baseline as read, the
// latter with a warning.
func (p *Plan) rebase(c *Change, o Observed, before NodeState) {
	key := c.ID.String()
	var held, recorded *knobval.Value
	if h := before.Holders[key]; len(h.Jobs) > 0 {
		held = &h.Value
	}
	if v, ok := before.Baseline[key]; ok {
		recorded = &v
	} else if held != nil {
		return // baseline lost while held: [defaults] at the release
	}
	_, now, err := o.Parts.Parse(o.Current)
	if err == nil && now == nil {
		now = knobval.Parts{} // read summed up: no part to name
	}
	var base, undo knobval.Value
	if err == nil {
		base, undo, err = o.Parts.Rebase(now, c.To, recorded, held)
	}
	if err != nil {
		p.Warnings = append(p.Warnings, Warn(KindKnob, "%s (its baseline kept as read)", About(c.ID, err)))
		return
	}
	p.State.Baseline[key], c.Undo = base, undo
}

// narrow sets a restore c of a part-wise knob o to what it may write while
// held (the job's value) is in force: a value naming its parts as it is, a
// summed-up one only to the parts that hold held now (Form.Narrow). It
// says whether c writes anything. A knob that cannot be read keeps c as
// it is, with a warning.
func (p *Plan) narrow(c *Change, o Observed, held knobval.Value) bool {
	if knobval.IsEach(c.To) {
		return true
	}
	err := o.Err
	var now knobval.Parts
	if err == nil {
		_, now, err = o.Parts.Parse(o.Current)
	}
	var named knobval.Parts
	if err == nil {
		named, err = o.Parts.Narrow(now, c.To, &held)
	}
	if err != nil {
		p.Warnings = append(p.Warnings, Warn(KindKnob, "%s (restored as journaled)", About(c.ID, err)))
		return true
	}
	c.To = o.Parts.FormatEach(named)
	return len(named) > 0
}

// Holds says whether the knob as read (o.Current) holds v: a part-wise
// knob's in whichever form v is in (Form.Holds: a value naming its parts,
// each that still exists holding its own), any other's when it reads v.
func (o Observed) Holds(v knobval.Value) (bool, error) {
	if o.Parts == nil {
		return o.Current == v, nil
	}
	_, now, err := o.Parts.Parse(o.Current)
	if err != nil {
		return false, err
	}
	if now == nil {
		now = knobval.Parts{}
	}
	return o.Parts.Holds(now, v)
}
