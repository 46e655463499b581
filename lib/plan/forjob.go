package plan

import (
	"maps"
	"slices"

	"gpuprep/lib/knobval"
)

// ForJob plans a prolog: for every knob the profile sets, hold its value for
// job and change it when needed. Shared rule: a knob already held by other
// jobs keeps the value in force; a job asking for another value gets a
// warning, not a change (or goes without the knob, where its definition
// says one job's value excludes another's: Observed.GoWithout). A knob
// nobody holds gets its baseline recorded (once, ever) before it is
// changed; a part-wise knob's names each part the change writes.
//
// A job may run its prolog again (Slurm requeues it, or an admin re-runs
// it) with other GPUs or another profile: what it held before and does not
// hold now is let go as its epilog would, so nothing is orphaned. obs then
// also carries the present value of those knobs (HasDesired false).
func ForJob(job string, obs []Observed, st NodeState) *Plan {
	p := &Plan{State: st.Clone()}
	held := map[string]bool{}
	sorted := sortObserved(obs)
	for _, o := range sorted {
		if !o.HasDesired && o.DesiredErr == nil {
			continue
		}
		if p.hold(job, o, st) {
			held[o.ID.String()] = true
		}
	}
	p.letGoEarlier(job, sorted, held)
	return p
}

// hold plans one knob the profile sets: it skips one that cannot be read
// or set, applies the shared rule, records the baseline, plans the change
// and the hold. It says whether job holds the knob.
func (p *Plan) hold(job string, o Observed, before NodeState) bool {
	switch {
	case o.Err != nil:
		p.Skipped = append(p.Skipped, Skip{ID: o.ID, Reason: o.Err.Error(), Required: o.Required})
		return false
	case o.DesiredErr != nil:
		p.Skipped = append(p.Skipped, Skip{ID: o.ID, Reason: o.DesiredErr.Error(), Required: o.Required})
		return false
	}
	key := o.ID.String()
	target, why := o.Desired, WhyProfile
	h := p.State.Holders[key]
	if others := remove(h.Jobs, job); len(others) > 0 {
		if h.Value != o.Desired && !p.conflict(Conflict{ID: o.ID, Job: job, Wants: o.Desired, Held: h.Value, Others: others}, o) {
			return false
		}
		target, why = h.Value, WhyShared
	}
	cur := o.Value()
	if _, ok := p.State.Baseline[key]; !ok && len(h.Jobs) == 0 {
		p.State.Baseline[key] = cur
	}
	if differs(cur, target) {
		c := Change{ID: o.ID, From: cur, To: target, Required: o.Required, Why: why}
		if o.Parts != nil {
			p.rebase(&c, o, before)
		}
		p.Changes = append(p.Changes, c)
	}
	h.Value = target
	if !contains(h.Jobs, job) {
		h.Jobs = append(h.Jobs, job)
	}
	p.State.Holders[key] = h
	p.Holds = append(p.Holds, Hold{ID: o.ID, Expected: target})
	return true
}

// conflict warns of a job wanting another value than other jobs hold, and
// says whether the job holds the value kept (the shared rule) or goes
// without the knob (Observed.GoWithout).
func (p *Plan) conflict(c Conflict, o Observed) (hold bool) {
	if o.GoWithout != nil {
		p.Warnings = append(p.Warnings, Warning{Kind: KindConflict, Text: o.GoWithout(c), User: true})
		return false
	}
	p.Warnings = append(p.Warnings, Tell(KindConflict, "%s: job %s asks for %q but jobs %v already hold %q; keeping %q",
		c.ID, c.Job, c.Wants, c.Others, c.Held, c.Held))
	return true
}

// letGoEarlier releases what job held before (an earlier run of its
// prolog) and holds no longer (held: what it holds now).
func (p *Plan) letGoEarlier(job string, sorted []Observed, held map[string]bool) {
	var earlier []Hold
	for _, key := range slices.Sorted(maps.Keys(p.State.Holders)) {
		if h := p.State.Holders[key]; contains(h.Jobs, job) && !held[key] {
			earlier = append(earlier, Hold{ID: idOf(key, sorted), Expected: h.Value})
		}
	}
	if len(earlier) == 0 {
		return
	}
	rel := Release(job, earlier, sorted, nil, p.State)
	p.Changes = append(p.Changes, rel.Changes...)
	p.Warnings = append(p.Warnings, rel.Warnings...)
	p.State = rel.State
}

// Release plans an epilog's restore: the job lets go of the knobs it held;
// a knob no other job holds goes back to its baseline (or to fallback, the
// config's [defaults], when no baseline was recorded). now gives each held
// knob as read now; a knob missing from it, or with Err set, could not be
// read, and is written anyway (Unread): a restore never depends on parsing
// what a job or a killed run left in the file. A part-wise knob's restore
// writes only the parts its value may write while the job's hold is in
// force (partwise.go).
func Release(job string, holds []Hold, now []Observed, fallback map[string]knobval.Value, st NodeState) *Plan {
	p := &Plan{State: st.Clone()}
	reads := map[string]Observed{}
	for _, o := range now {
		reads[o.ID.String()] = o
	}
	for _, hd := range holds {
		key := hd.ID.String()
		h := p.State.Holders[key]
		h.Jobs = remove(h.Jobs, job)
		if len(h.Jobs) > 0 {
			p.State.Holders[key] = h
			continue
		}
		delete(p.State.Holders, key)
		target, ok := p.State.Baseline[key]
		if !ok {
			if target, ok = fallback[hd.ID.Name]; !ok {
				p.Warnings = append(p.Warnings, Warn(KindNoBaseline, "%s: no baseline and no [defaults] value; left at its current value", hd.ID))
				continue
			}
		}
		p.restore(hd, target, reads[key])
	}
	return p
}

// restore plans putting one knob back to target, o being it as read now
// (o.ID empty: not read).
func (p *Plan) restore(hd Hold, target knobval.Value, o Observed) {
	c := Change{ID: hd.ID, To: target, Required: true, Why: WhyRestore}
	read := o.ID == hd.ID && o.Err == nil
	if read {
		c.From = o.Value()
		if !differs(c.From, target) {
			return
		}
	} else {
		c.From, c.Unread = knobval.Unknown, true
	}
	if o.ID == hd.ID && o.Parts != nil && !p.narrow(&c, o, hd.Expected) {
		return
	}
	p.Changes = append(p.Changes, c)
}
