package knob

// Rebaser is a knob whose value is kept part by part while Read sums it up:
// housekeeping_cpus holds one cpuset per service cgroup, and its Value is
// one CPU list where every cgroup holds the same (what plans compare and
// drift is checked against). Putting such a knob back with a summed-up
// value would write parts that appeared since (a service started during
// the job). So lib/hook asks it, for every change, what to journal instead:
// a baseline and an undo naming each part the change writes, and, for a
// restore of a summed-up value (an older gpuprep's baseline, [defaults]),
// the parts that value may write.
type Rebaser interface {
	ID() ID
	// Rebase reads the knob part by part and returns the baseline to keep
	// before it is changed to to, and the value that undoes that change.
	// recorded is the baseline kept so far (nil: none); held the value
	// the jobs that hold the knob set (nil: no job holds it).
	Rebase(to Value, recorded, held *Value) (baseline, undo Value, err error)
	// Restoring is what a restore to to may write while held is in force:
	// to itself where it names its parts, else the parts that hold held
	// now, each given to; write is false when that is none.
	Restoring(to, held Value) (v Value, write bool, err error)
}

// Holder is a knob whose Value has more than one form (a Rebaser's
// per-part baseline and its summed-up Read): Holds says whether the node
// holds v now, whichever form v is in. Compare a recorded value with the
// node through it, not with Read's text.
type Holder interface {
	Holds(v Value) (bool, error)
}

// Merger is a knob whose baseline grows part by part as later jobs change
// parts the first did not (a Rebaser): Merge joins the copies two job
// records keep, older's parts winning, when node.json's is lost.
type Merger interface {
	Merge(older, newer Value) (Value, error)
}
