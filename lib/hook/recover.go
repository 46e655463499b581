package hook

import (
	"context"

	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// recoverInterrupted finishes what a killed run left: if a journal exists,
// every change it lists is rolled back (From written back, last change
// first), the node state and the job record are put back as they were, and
// the journal is removed. It runs under the node lock, before anything else.
func recoverInterrupted(ctx context.Context, o *Options) error {
	var j Journal
	found, err := o.Spool.ReadJSON(journalFile, &j)
	if err != nil {
		return nodeErrorf("interrupted-run journal unreadable: %v", err)
	}
	if !found {
		return nil
	}
	o.Log.Warn("rolling back an interrupted run", "op", j.Op, "job", j.Job, "started", j.Started, "changes", len(j.Changes))
	knobs := catalog(o, allGPUs(o))
	var failed []string
	for i := len(j.Changes) - 1; i >= 0; i-- {
		c := j.Changes[i]
		k, ok := knobs[c.ID.String()]
		if !ok {
			failed = append(failed, c.ID.String()+" (knob not found)")
			continue
		}
		if cur, err := k.Read(); err == nil && cur == c.From {
			continue
		}
		if err := k.Apply(c.From); err != nil {
			failed = append(failed, about(c.ID, err))
		}
	}
	if len(failed) > 0 {
		return nodeErrorf("cannot roll back interrupted %s of job %s: %v", j.Op, j.Job, failed)
	}
	st := j.NodeBefore
	if st.Baseline == nil {
		st = plan.NodeState{}.Clone()
	}
	if err := commit(o.Spool, st, j.Job, j.JobBefore); err != nil {
		return nodeErrorf("roll back of job %s: %v", j.Job, err)
	}
	o.Log.Info("rolled back interrupted run", "op", j.Op, "job", j.Job)
	return checkDeadline(ctx, "the run after recovery")
}

// apply makes the changes in order; on a failure of a required change it
// undoes what it did (CNI-style: add undoes partial work) and returns the
// failure. A failed optional change is rolled back, logged and left out.
func apply(o *Options, knobs map[string]knob.Knob, changes []plan.Change) (done []plan.Change, warnings []string, err error) {
	for _, c := range changes {
		k := knobs[c.ID.String()]
		crashPoint()
		aerr := k.Apply(c.To)
		if aerr == nil {
			done = append(done, c)
			continue
		}
		_ = k.Apply(c.From)
		if c.Required {
			for i := len(done) - 1; i >= 0; i-- {
				if uerr := knobs[done[i].ID.String()].Apply(done[i].From); uerr != nil {
					o.Log.Error("undo failed", "knob", done[i].ID.String(), "err", uerr)
				}
			}
			return nil, warnings, nodeErrorf("required knob %s", about(c.ID, aerr))
		}
		warnings = append(warnings, about(c.ID, aerr)+" (left as it was)")
	}
	return done, warnings, nil
}
