package hook

import (
	"context"

	"gpuprep/lib/drift"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// recoverInterrupted finishes what a killed run left (its journal), as Slurm
// really goes on after a killed hook: the next thing to run on the node may
// be any job's prolog or epilog, or an admin's retry. A prolog is rolled
// back (the job did not start); a release is rolled forward (the job is
// over). A journal of an earlier boot is dropped: the reboot reset the
// node, and loadSpool records the baseline anew. It runs under the node
// lock, before anything else.
func recoverInterrupted(ctx context.Context, o *run, bootID string) error {
	var j Journal
	found, err := o.Spool.ReadJSON(journalFile, &j)
	if err != nil {
		return nodeErrorf("interrupted-run journal unreadable: %v", err)
	}
	if !found {
		return nil
	}
	switch {
	case bootID != "" && j.BootID != "" && j.BootID != bootID:
		o.Log.Warn("dropping the journal of a run interrupted by a reboot", "op", j.Op, "job", j.Job, "started", j.Started)
		if err := drift.Append(o.Spool, j.Drift); err != nil {
			o.Log.Error("drift records not written", "job", j.Job, "err", err)
		}
		if err := o.Spool.Remove(journalFile); err != nil {
			return nodeErrorf("spool: %v", err)
		}
	case j.Op == opRelease:
		o.Log.Warn("finishing an interrupted release", "job", j.Job, "started", j.Started, "changes", len(j.Changes))
		var gpus []string
		if j.JobBefore != nil {
			gpus = j.JobBefore.GPUs
		}
		_, err := finishRelease(o, &j, catalog(o, gpusByUUID(o.devices(), gpus)))
		for _, w := range o.evidence.warns {
			o.Log.Warn(w, "job", j.Job)
		}
		if err != nil {
			return err
		}
		o.Log.Info("finished interrupted release", "job", j.Job)
	case j.Op == opProlog:
		if err := rollBack(o, &j); err != nil {
			return err
		}
	default:
		return nodeErrorf("interrupted-run journal: unknown op %q", j.Op)
	}
	return checkDeadline(ctx, "the run after recovery")
}

// rollBack undoes a killed prolog: every From is written back, last change
// first, whatever the knob holds now (what it holds is logged: a value cut
// in half, or one the driver cannot report, never stops the roll back).
// On success node.json and the job record are put back as they were and the
// journal goes; on failure the journal stays for the next run.
func rollBack(o *run, j *Journal) error {
	o.Log.Warn("rolling back an interrupted prolog", "job", j.Job, "started", j.Started, "changes", len(j.Changes))
	knobs := catalog(o, o.devices())
	failed := undo(o, knobs, j.Changes)
	if len(failed) > 0 {
		return nodeErrorf("cannot roll back interrupted prolog of job %s: %v", j.Job, failed)
	}
	if err := commit(o.Spool, j.NodeBefore, j.Job, j.JobBefore); err != nil {
		return nodeErrorf("roll back of job %s: %v", j.Job, err)
	}
	o.Log.Info("rolled back interrupted prolog", "job", j.Job)
	return nil
}

// undo writes each change's From back, last first, keeping going past
// failures, which it returns. A change whose From was never read has
// nothing to write back.
func undo(o *run, knobs map[string]knob.Knob, changes []plan.Change) []string {
	var failed []string
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.Unread {
			o.Log.Warn("undo: previous value was never read; left as it is", "knob", c.ID.String())
			continue
		}
		k, ok := knobs[c.ID.String()]
		if !ok {
			failed = append(failed, c.ID.String()+" (knob not found)")
			continue
		}
		if cur, err := k.Read(); err != nil {
			o.Log.Info("undo: present value unreadable; writing the journaled one", "knob", c.ID.String(), "err", err)
		} else if cur != c.From {
			o.Log.Debug("undo", "knob", c.ID.String(), "found", string(cur), "writing", string(undoValue(c)))
		}
		if err := k.Apply(undoValue(c)); err != nil {
			failed = append(failed, about(c.ID, err))
		}
	}
	return failed
}

// apply makes the changes in order. When a required change fails, or a
// failed change cannot be undone, it undoes everything it did (CNI-style:
// add undoes partial work) and returns a node error; rolledBack says whether
// that undo succeeded (else the journal must stay for the next run). A failed
// optional change that was undone is left out, with a warning.
func apply(o *run, knobs map[string]knob.Knob, changes []plan.Change) (done []plan.Change, warnings []string, rolledBack bool, err error) {
	for _, c := range changes {
		k := knobs[c.ID.String()]
		aerr := k.Apply(c.To)
		if aerr == nil {
			done = append(done, c)
			continue
		}
		uerr := error(nil)
		if !c.Unread {
			uerr = k.Apply(undoValue(c))
		}
		if c.Required || uerr != nil {
			failed := undo(o, knobs, done)
			for _, f := range failed {
				o.Log.Error("undo failed", "knob", f)
			}
			if uerr != nil {
				return nil, warnings, false, nodeErrorf("knob %s, and cannot put it back: %v", about(c.ID, aerr), uerr)
			}
			return nil, warnings, len(failed) == 0, nodeErrorf("required knob %s", about(c.ID, aerr))
		}
		warnings = append(warnings, about(c.ID, aerr)+" (left as it was)")
	}
	return done, warnings, true, nil
}

// undoValue is what undoing c writes: its Undo where the planner set one
// (a part-wise knob's parts), else From.
func undoValue(c plan.Change) knob.Value {
	if c.Undo != "" {
		return c.Undo
	}
	return c.From
}
