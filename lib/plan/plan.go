// Package plan turns what a job wants and what the node has into an ordered
// list of changes. It is pure: the knobs' current values, the node's shared
// state and the profile come in as data, a Plan comes out, and nothing is
// read or written. lib/hook executes plans with a write-ahead journal.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"gpuprep/lib/knobval"
)

// Holding is a knob value that jobs on the node currently rely on.
type Holding struct {
	Value knobval.Value `json:"value"`
	Jobs  []string      `json:"jobs"`
}

// NodeState is what the node's spool remembers between jobs (node.json).
type NodeState struct {
	// Baseline is each knob's value before gpuprep first touched it,
	// recorded once and never overwritten by a tuned value.
	Baseline map[string]knobval.Value `json:"baseline"`
	// Holders are the knobs jobs hold now, by knob ID string.
	Holders map[string]Holding `json:"holders"`
}

// Clone returns a deep copy.
func (s NodeState) Clone() NodeState {
	out := NodeState{Baseline: map[string]knobval.Value{}, Holders: map[string]Holding{}}
	for k, v := range s.Baseline {
		out.Baseline[k] = v
	}
	for k, h := range s.Holders {
		out.Holders[k] = Holding{Value: h.Value, Jobs: append([]string(nil), h.Jobs...)}
	}
	return out
}

// Observed is one knob as read now.
type Observed struct {
	ID knobval.ID
	// Current is the value read; Err is set instead when it could not be
	// read (wrapping knobval.ErrUnsupported when absent).
	Current knobval.Value
	Err     error
	// Desired is what the job's profile asks for (already through
	// Knob.Desired); HasDesired is false when the profile leaves the knob
	// alone; DesiredErr is set when the setting is invalid here.
	Desired    knobval.Value
	HasDesired bool
	DesiredErr error
	Required   bool
	// OnConflict, when set, is asked about a job that wants another value
	// than the one other jobs hold (others; held): it words the warning,
	// and hold says whether the job holds the value kept, as the shared
	// rule has it, or goes without the knob (mps: a daemon serves one
	// user, and a job of another keeps none running). nil: the shared
	// rule's own words, and the job holds the value kept.
	OnConflict func(job string, wants, held knobval.Value, others []string) (warning string, hold bool)
}

// Change is one write the plan makes.
type Change struct {
	ID       knobval.ID    `json:"id"`
	From     knobval.Value `json:"from"`
	To       knobval.Value `json:"to"`
	Required bool          `json:"required"`
	Why      string        `json:"why"` // "profile", "shared", "restore"
	// Unread is set when the present value could not be read: From is
	// knobval.Unknown, the change is made anyway, and undoing it has nothing
	// to write back.
	Unread bool `json:"unread,omitempty"`
	// Undo, when set, is what undoing the change writes instead of From:
	// for a knob whose From sums up a value kept part by part
	// (housekeeping_cpus: one cpuset per cgroup), each part the change
	// writes with what it held, so that undoing it never writes a part
	// that appeared since. lib/hook sets it (knob.Rebaser).
	Undo knobval.Value `json:"undo,omitempty"`
}

// Hold is a knob value the job relies on and the epilog checks for drift.
type Hold struct {
	ID       knobval.ID    `json:"id"`
	Expected knobval.Value `json:"expected"`
}

// Skip is a knob the plan leaves alone, and why.
type Skip struct {
	ID       knobval.ID `json:"id"`
	Reason   string     `json:"reason"`
	Required bool       `json:"required"` // a required knob skipped fails the prolog
}

// Plan is the outcome of planning.
type Plan struct {
	Changes  []Change  `json:"changes"`
	Holds    []Hold    `json:"holds"`
	Skipped  []Skip    `json:"skipped,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	State    NodeState `json:"-"` // the node state to save once the changes are made
}

// Failed returns the first required knob the plan could not honour.
func (p *Plan) Failed() (Skip, bool) {
	for _, s := range p.Skipped {
		if s.Required {
			return s, true
		}
	}
	return Skip{}, false
}

// ForJob plans a prolog: for every knob the profile sets, hold its value for
// job and change it when needed. Shared rule: a knob already held by other
// jobs keeps the value in force; a job asking for another value gets a
// warning, not a change. A knob nobody holds gets its baseline recorded
// (once, ever) before it is changed.
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
		key := o.ID.String()
		switch {
		case o.Err != nil:
			p.Skipped = append(p.Skipped, Skip{ID: o.ID, Reason: o.Err.Error(), Required: o.Required})
			continue
		case o.DesiredErr != nil:
			p.Skipped = append(p.Skipped, Skip{ID: o.ID, Reason: o.DesiredErr.Error(), Required: o.Required})
			continue
		}
		target, why := o.Desired, "profile"
		h := p.State.Holders[key]
		if others := remove(h.Jobs, job); len(others) > 0 {
			if h.Value != o.Desired {
				msg, hold := fmt.Sprintf("%s: job %s asks for %q but jobs %v already hold %q; keeping %q", o.ID, job, o.Desired, others, h.Value, h.Value), true
				if o.OnConflict != nil {
					msg, hold = o.OnConflict(job, o.Desired, h.Value, others)
				}
				p.Warnings = append(p.Warnings, msg)
				if !hold {
					continue
				}
			}
			target, why = h.Value, "shared"
		}
		if _, ok := p.State.Baseline[key]; !ok && len(h.Jobs) == 0 {
			p.State.Baseline[key] = o.Current
		}
		if differs(o.Current, target) {
			p.Changes = append(p.Changes, Change{ID: o.ID, From: o.Current, To: target, Required: o.Required, Why: why})
		}
		h.Value = target
		if !contains(h.Jobs, job) {
			h.Jobs = append(h.Jobs, job)
		}
		p.State.Holders[key] = h
		p.Holds = append(p.Holds, Hold{ID: o.ID, Expected: target})
		held[key] = true
	}
	var earlier []Hold
	for _, key := range slices.Sorted(maps.Keys(p.State.Holders)) {
		if h := p.State.Holders[key]; contains(h.Jobs, job) && !held[key] {
			earlier = append(earlier, Hold{ID: idOf(key, sorted), Expected: h.Value})
		}
	}
	if len(earlier) > 0 {
		current := map[string]knobval.Value{}
		for _, o := range sorted {
			if o.Err == nil {
				current[o.ID.String()] = o.Current
			}
		}
		rel := Release(job, earlier, current, nil, p.State)
		p.Changes = append(p.Changes, rel.Changes...)
		p.Warnings = append(p.Warnings, rel.Warnings...)
		p.State = rel.State
	}
	return p
}

// Release plans an epilog's restore: the job lets go of the knobs it held;
// a knob no other job holds goes back to its baseline (or to fallback, the
// config's [defaults], when no baseline was recorded). current gives each
// held knob's value now; a knob missing from it could not be read, and is
// written anyway (Unread): a restore never depends on parsing what a job
// or a killed run left in the file.
func Release(job string, holds []Hold, current map[string]knobval.Value, fallback map[string]knobval.Value, st NodeState) *Plan {
	p := &Plan{State: st.Clone()}
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
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: no baseline and no [defaults] value; left at its current value", hd.ID))
				continue
			}
		}
		cur, read := current[key]
		if !read {
			p.Changes = append(p.Changes, Change{ID: hd.ID, From: knobval.Unknown, To: target, Required: true, Why: "restore", Unread: true})
			continue
		}
		if differs(cur, target) {
			p.Changes = append(p.Changes, Change{ID: hd.ID, From: cur, To: target, Required: true, Why: "restore"})
		}
	}
	return p
}

// idOf turns a knob ID string back into the ID, from the observed knobs
// when one matches (else split at the last "@").
func idOf(key string, obs []Observed) knobval.ID {
	for _, o := range obs {
		if o.ID.String() == key {
			return o.ID
		}
	}
	i := strings.LastIndex(key, "@")
	if i < 0 {
		return knobval.ID{Name: key}
	}
	return knobval.ID{Name: key[:i], Scope: key[i+1:]}
}

// differs says whether a knob must be written to go from cur to target. A
// value that cannot be read back (knobval.Unknown: NVML has no getter for locked
// clocks) always is.
func differs(cur, target knobval.Value) bool {
	return cur != target || cur == knobval.Unknown
}

// Drifted says whether a held knob's value now differs from what the job
// expected; unknown values cannot drift.
func Drifted(expected, found knobval.Value) bool {
	return expected != found && expected != knobval.Unknown && found != knobval.Unknown
}

func sortObserved(obs []Observed) []Observed {
	out := append([]Observed(nil), obs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].ID, out[j].ID
		if (a.Scope == knobval.NodeScope) != (b.Scope == knobval.NodeScope) {
			return a.Scope == knobval.NodeScope // node knobs first, then GPUs
		}
		if a.Scope != b.Scope {
			return a.Scope < b.Scope
		}
		return a.Name < b.Name
	})
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func remove(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
