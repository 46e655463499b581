// Package plan turns what a job wants and what the node has into an ordered
// list of changes. It is pure: the knobs' current values, the node's shared
// state and the profile come in as data, a Plan comes out, and nothing is
// read or written. lib/hook executes plans with a write-ahead journal.
package plan

import (
	"fmt"
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
	// Parts is set for a part-wise knob (its definition says so:
	// housekeeping_cpus): Current then names every part, plans compare it
	// summed up (Parts.Format), and the planner keeps its baseline and
	// undo part by part (partwise.go).
	Parts *knobval.Form
	// GoWithout is set for a knob one job's value excludes another's (its
	// definition says so: mps, whose daemon serves one user). A job that
	// wants another value than the one other jobs hold then goes without
	// the knob rather than hold the value kept, and GoWithout words the
	// warning its user gets. nil: the shared rule, the job holds the value
	// kept.
	GoWithout func(Conflict) string
}

// Conflict is a job wanting another value of a knob than the one other jobs
// hold.
type Conflict struct {
	ID     knobval.ID
	Job    string
	Wants  knobval.Value
	Held   knobval.Value
	Others []string
}

// Value is Current as plans compare it: summed up for a part-wise knob
// (a value that does not parse is compared as read).
func (o Observed) Value() knobval.Value {
	if o.Parts == nil {
		return o.Current
	}
	if v, err := o.Parts.Sum(o.Current); err == nil {
		return v
	}
	return o.Current
}

// Change is one write the plan makes.
type Change struct {
	ID       knobval.ID    `json:"id"`
	From     knobval.Value `json:"from"`
	To       knobval.Value `json:"to"`
	Required bool          `json:"required"`
	Why      string        `json:"why"` // WhyProfile, WhyShared or WhyRestore
	// Unread is set when the present value could not be read: From is
	// knobval.Unknown, the change is made anyway, and undoing it has nothing
	// to write back.
	Unread bool `json:"unread,omitempty"`
	// Undo, when set, is what undoing the change writes instead of From:
	// for a knob whose From sums up a value kept part by part
	// (housekeeping_cpus: one cpuset per cgroup), each part the change
	// writes with what it held, so that undoing it never writes a part
	// that appeared since. The planner sets it for a part-wise knob
	// (partwise.go).
	Undo knobval.Value `json:"undo,omitempty"`
}

// Why a Change is made.
const (
	WhyProfile = "profile" // the job's profile asks for it
	WhyShared  = "shared"  // other jobs hold it; the job gets the value kept
	WhyRestore = "restore" // no job holds it any more: its baseline
)

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
	Warnings []Warning `json:"warnings,omitempty"`
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

// About says what went wrong with a knob without naming it twice: knob
// errors start with the knob's ID already.
func About(id knobval.ID, err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, id.String()+": "); ok {
		msg = rest
	}
	return fmt.Sprintf("%s: %s", id, msg)
}
