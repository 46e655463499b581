package isolate

import (
	"maps"
	"slices"
	"strings"
)

// What putting the cgroups back writes. The canonical Value (Format) is
// what plans compare and what drift is checked against: one CPU list where
// every cgroup holds the same. That is not enough to put them back: a
// restore of a one-for-all value would write it to every cgroup present
// at restore time, including a service started during the job with its
// own AllowedCPUs=. So the baseline, and what undoing a prolog's change
// writes, are always per cgroup (FormatPerCgroup): each cgroup gpuprep
// wrote in this boot, with what it held before gpuprep first wrote it.
// Apply of such a value writes those cgroups only (each that still
// exists): a cgroup that appeared since is never written back.

// FormatPerCgroup is s with every cgroup named, even where all hold the
// same ("init.scope=;user.slice="); "" when s is empty.
func (s State) FormatPerCgroup() string {
	parts := make([]string, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, ";")
}

// Rebase says what a prolog about to apply to (a Value; the
// housekeeping CPUs) must journal to put the cgroups back, given what the
// targets hold now. undo is each cgroup the change writes (one of now that
// does not already hold what to gives it) with what it holds now, per
// cgroup; "" when it writes none. baseline is the baseline to keep:
// recorded (nil: none yet) plus each written cgroup it does not name, with
// what it holds now, per cgroup. A cgroup already named keeps its value:
// the baseline is what a cgroup held before gpuprep first wrote it.
// Where the change writes nothing, baseline is recorded as it is (or, with
// none, now's Value).
//
// held is the value the jobs that hold the knob set (nil: no job holds
// it), for a recorded baseline in the uniform form (see Named).
func Rebase(now State, to string, recorded, held *string) (baseline, undo string, err error) {
	cpus, per, err := ParseValue(to)
	if err != nil {
		return "", "", err
	}
	written := State{}
	for cg, cur := range now {
		want, ok := cpus, per == nil
		if per != nil {
			want, ok = per[cg]
		}
		if ok && cur != want {
			written[cg] = cur
		}
	}
	if len(written) == 0 {
		if recorded != nil {
			return *recorded, "", nil
		}
		return now.Format(), "", nil
	}
	base := State{}
	if recorded != nil {
		if base, err = Named(now, *recorded, held); err != nil {
			return "", "", err
		}
	}
	for cg, cur := range written {
		if _, ok := base[cg]; !ok {
			base[cg] = cur
		}
	}
	return base.FormatPerCgroup(), written.FormatPerCgroup(), nil
}

// Named is the cgroups a baseline (or any value a restore writes) names,
// with what each gets back. A per-cgroup value names its own. A uniform
// one says what every cgroup held, not which ones gpuprep wrote: gpuprep
// before this per-cgroup baseline recorded "" that way when every service
// had no limit, and so does a prolog that found every cgroup at the
// housekeeping CPUs already (it writes none), and [defaults] gives one
// where no baseline exists. Such a value is taken to name each cgroup of
// now that holds held, the value the jobs holding the knob set: a cgroup
// holding anything else is not gpuprep's (a service started during the
// job with its own AllowedCPUs=, or one an admin changed), and is left
// as it is. It names none when no job holds the knob (held nil: no cgroup
// holds a value of gpuprep's) or when it is held itself (putting it back
// changes nothing). A unit started during the job with exactly the
// housekeeping CPUs of its own is taken for gpuprep's: the uniform form
// cannot tell.
func Named(now State, v string, held *string) (State, error) {
	cpus, per, err := ParseValue(v)
	if err != nil {
		return nil, err
	}
	if per != nil {
		return per, nil
	}
	out := State{}
	if held == nil {
		return out, nil
	}
	hcpus, hper, err := ParseValue(*held)
	if err != nil {
		return nil, err
	}
	for cg, cur := range now {
		want, ok := hcpus, hper == nil
		if hper != nil {
			want, ok = hper[cg]
		}
		if ok && cur == want && cur != cpus {
			out[cg] = cpus
		}
	}
	return out, nil
}

// Holds says whether the cgroups hold what v says: a per-cgroup v, each
// of its cgroups that still exists holding its own value (a unit that
// stopped is no difference: a restore skips it too); a uniform one, every
// cgroup of now holding it.
func Holds(now State, v string) (bool, error) {
	cpus, per, err := ParseValue(v)
	if err != nil {
		return false, err
	}
	if per == nil {
		return now.Format() == cpus, nil
	}
	for cg, want := range per {
		if cur, ok := now[cg]; ok && cur != want {
			return false, nil
		}
	}
	return true, nil
}

// MergeBaselines joins two per-cgroup baselines of one boot: every cgroup
// either names, older's value where both do (a cgroup's baseline is what
// it held before gpuprep first wrote it). A uniform older is kept as it
// is: it names no cgroup to join (see Named).
func MergeBaselines(older, newer string) (string, error) {
	_, o, err := ParseValue(older)
	if err != nil {
		return "", err
	}
	_, n, err := ParseValue(newer)
	if err != nil {
		return "", err
	}
	if o == nil || n == nil {
		return older, nil
	}
	for cg, v := range n {
		if _, ok := o[cg]; !ok {
			o[cg] = v
		}
	}
	return o.FormatPerCgroup(), nil
}
