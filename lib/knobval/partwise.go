package knobval

// What putting back a part-wise knob writes. A knob whose parts come and go
// while a job runs (housekeeping_cpus: a service started during the job
// is a new cgroup) is compared in its summed-up form (Form.Format): one
// value where every part holds the same. That is not enough to put it
// back: writing a one-for-all value at restore time would also write the
// parts that appeared since (a service with its own AllowedCPUs=). So its
// baseline, and what undoing a change writes, name their parts always
// (FormatEach): each part gpuprep wrote, with what it held before gpuprep
// first wrote it. Writing such a value writes those parts only (each that
// still exists). The planner (lib/plan) uses these for every knob whose
// definition says it is part-wise.

// Rebase says what a change to to must keep to put the parts back, given
// what they hold now. undo names each part the change writes (one of now
// that to gives another value) with what it holds now; "" when it writes
// none. baseline is the baseline to keep: recorded (nil: none yet) plus
// each written part it does not name, with what it holds now. A part
// already named keeps its value: the baseline is what a part held before
// gpuprep first wrote it. Where the change writes nothing, baseline is
// recorded as it is (or, with none, now summed up).
//
// held is the value the jobs that hold the knob set (nil: no job holds
// it), for a recorded baseline in the summed form (see Narrow).
func (f Form) Rebase(now Parts, to Value, recorded, held *Value) (baseline, undo Value, err error) {
	all, each, err := f.Parse(to)
	if err != nil {
		return "", "", err
	}
	written := Parts{}
	for k, cur := range now {
		if want, ok := wanted(all, each, k); ok && cur != want {
			written[k] = cur
		}
	}
	if len(written) == 0 {
		if recorded != nil {
			return *recorded, "", nil
		}
		return f.Format(now), "", nil
	}
	base := Parts{}
	if recorded != nil {
		if base, err = f.Narrow(now, *recorded, held); err != nil {
			return "", "", err
		}
	}
	for k, cur := range written {
		if _, ok := base[k]; !ok {
			base[k] = cur
		}
	}
	return f.FormatEach(base), f.FormatEach(written), nil
}

// wanted is what a value (all for every part, or each's own) gives part k;
// ok is false when it names other parts only.
func wanted(all string, each Parts, k string) (string, bool) {
	if each == nil {
		return all, true
	}
	v, ok := each[k]
	return v, ok
}

// Narrow is the parts a value v writes when put back (a baseline, a
// restore's target), with what each gets. A value naming its parts names
// its own. A summed-up one says what every part held, not which ones
// gpuprep wrote (an older gpuprep recorded baselines so, a prolog that
// found every part at its target already writes none, and [defaults]
// gives one where no baseline exists). Such a value is taken to name each
// part of now that holds held, the value the jobs holding the knob set: a
// part holding anything else is not gpuprep's (one that appeared during
// the job, or one an admin changed), and is left as it is. It names none
// when no job holds the knob (held nil) or when it is held itself
// (putting it back changes nothing).
func (f Form) Narrow(now Parts, v Value, held *Value) (Parts, error) {
	all, each, err := f.Parse(v)
	if err != nil {
		return nil, err
	}
	if each != nil {
		return each, nil
	}
	out := Parts{}
	if held == nil {
		return out, nil
	}
	hall, heach, err := f.Parse(*held)
	if err != nil {
		return nil, err
	}
	for k, cur := range now {
		if want, ok := wanted(hall, heach, k); ok && cur == want && cur != all {
			out[k] = all
		}
	}
	return out, nil
}

// Holds says whether now holds what v says: a value naming its parts, each
// of them that still exists holding its own value (a part that went is no
// difference: a restore skips it too); a summed-up one, now summed up
// being it.
func (f Form) Holds(now Parts, v Value) (bool, error) {
	all, each, err := f.Parse(v)
	if err != nil {
		return false, err
	}
	if each == nil {
		return string(f.Format(now)) == all, nil
	}
	for k, want := range each {
		if cur, ok := now[k]; ok && cur != want {
			return false, nil
		}
	}
	return true, nil
}

// Merge joins two baselines naming their parts: every part either names,
// older's value where both do (a part's baseline is what it held before
// gpuprep first wrote it). A summed-up older or newer leaves older as it
// is: it names no part to join (see Narrow).
func (f Form) Merge(older, newer Value) (Value, error) {
	_, o, err := f.Parse(older)
	if err != nil {
		return "", err
	}
	_, n, err := f.Parse(newer)
	if err != nil {
		return "", err
	}
	if o == nil || n == nil {
		return older, nil
	}
	for k, v := range n {
		if _, ok := o[k]; !ok {
			o[k] = v
		}
	}
	return f.FormatEach(o), nil
}
