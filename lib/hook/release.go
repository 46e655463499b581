package hook

import (
	"context"
	"slices"

	"gpuprep/lib/drift"
	"gpuprep/lib/evidence"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// releaseJob lets go of everything rec holds, as the job's epilog: it
// checks drift (once per job), journals the release, restores each knob no
// other job holds to its baseline, and removes the record. A restore that
// fails keeps the record, holding just what failed, so that
// `gpuprep-epilog --job-id N` can retry. other is set when the job is not
// this run's own (a dead job): its drift is reported under its id, and its
// notices for srunwrap are removed. ev, when set, makes the job's evidence
// record from the drift found; the journal carries it (finishRelease).
func releaseJob(ctx context.Context, o *run, s *spoolState, rec *JobRecord, out *Outcome, other bool, ev func([]DriftFound) *evidence.Record) error {
	knobs := catalog(o, gpusByUUID(o.devices(), rec.GPUs))
	now, holds := readHeld(knobs, rec, out)
	var found []DriftFound
	if !rec.DriftChecked {
		found = driftOf(rec, now)
		if other {
			for i := range found {
				found[i].Job = rec.Job
			}
		}
		out.Drift = append(out.Drift, found...)
	}
	p := plan.Release(rec.Job, holds, now, defaults(o, knobs), s.nodeState())
	if !other {
		out.Changes = p.Changes
	} else {
		noteRestored(out, rec.Job, p.Changes)
	}
	out.Warnings = append(out.Warnings, p.Warnings...)
	if o.DryRun {
		return nil
	}
	if err := checkDeadline(ctx, "restoring the node"); err != nil {
		return err
	}
	j := &Journal{Op: opRelease, Job: rec.Job, BootID: s.bootID, Started: o.now(), Changes: p.Changes,
		NodeBefore: s.node, JobBefore: rec, NodeAfter: s.node, Drift: driftRecords(o, rec, found)}
	if ev != nil {
		j.Evidence = ev(found)
	}
	if err := writeJournal(o.Spool, j); err != nil {
		return nodeErrorf("%v", err)
	}
	after, err := finishRelease(o, j, knobs)
	if after != nil {
		s.jobs[rec.Job] = after
	} else {
		delete(s.jobs, rec.Job)
	}
	if other {
		// A dead job's epilog never ran: its notices go as they would
		// have then (this run's own job's go after its epilog).
		forgetJobNotices(o, rec.Job)
	}
	return err
}

// readHeld reads every knob rec holds or checks (its invariants), as the
// planner sees them; a knob that cannot be read is a warning (its restore
// is written anyway). holds are rec's holds of knobs still present.
func readHeld(knobs map[string]knob.Knob, rec *JobRecord, out *Outcome) (now []plan.Observed, holds []plan.Hold) {
	var toRead []knob.Knob
	for _, h := range slices.Concat(rec.Holds, rec.Invariants) {
		k, ok := knobs[h.ID.String()]
		if !ok {
			out.warn(plan.KindKnob, "%s: knob no longer present; nothing to restore", h.ID)
			continue
		}
		if !slices.Contains(toRead, k) {
			toRead = append(toRead, k)
		}
	}
	vals, errs := readAll(toRead)
	for i, k := range toRead {
		if errs[i] != nil {
			out.warn(plan.KindKnob, "%s: %v", k.ID(), errs[i])
		}
		o := observed(k.ID())
		o.Current, o.Err = vals[i], errs[i]
		now = append(now, o)
	}
	for _, h := range rec.Holds {
		if _, ok := knobs[h.ID.String()]; ok {
			holds = append(holds, h)
		}
	}
	return now, holds
}

// finishRelease carries out a release journal (written by releaseJob, or
// left by a killed run): it appends the drift records (idempotent), writes
// every change's To whatever the knob holds now, keeping going past
// failures, and commits. When a restore failed, the job's record stays,
// holding what failed, and the error names each failure; after is that
// record (nil when the job let go of everything).
func finishRelease(o *run, j *Journal, knobs map[string]knob.Knob) (after *JobRecord, err error) {
	if err := drift.Append(o.Spool, j.Drift); err != nil {
		o.Log.Error("drift records not written", "job", j.Job, "err", err)
	}
	if j.Evidence != nil {
		o.evidence.name, o.evidence.warns = saveEvidence(o, *j.Evidence)
	}
	var failed []string
	failedKeys := map[string]bool{}
	for _, c := range j.Changes {
		k, ok := knobs[c.ID.String()]
		if !ok {
			failed = append(failed, c.ID.String()+" (knob not found)")
			failedKeys[c.ID.String()] = true
			continue
		}
		if err := k.Apply(c.To); err != nil {
			failed = append(failed, about(c.ID, err))
			failedKeys[c.ID.String()] = true
		}
	}
	after = j.JobAfter
	if len(failed) > 0 && j.JobBefore != nil {
		keep := *j.JobBefore
		keep.Holds = nil
		for _, h := range j.JobBefore.Holds {
			if failedKeys[h.ID.String()] {
				keep.Holds = append(keep.Holds, h)
			}
		}
		keep.Invariants, keep.DriftChecked = nil, true
		after = &keep
	}
	if err := commit(o.Spool, j.NodeAfter, j.Job, after); err != nil {
		return after, nodeErrorf("spool: %v", err)
	}
	if len(failed) > 0 {
		return after, nodeErrorf("restore failed: %v (job %s keeps them; retry with gpuprep-epilog --job-id %s)", failed, j.Job, j.Job)
	}
	return nil, nil
}

// driftOf compares what the job held, and the config's invariants, with
// the knobs as read now (a part-wise knob's summed up).
func driftOf(rec *JobRecord, now []plan.Observed) []DriftFound {
	current := map[string]knob.Value{}
	for _, o := range now {
		if o.Err == nil {
			current[o.ID.String()] = o.Value()
		}
	}
	var out []DriftFound
	for _, set := range []struct {
		kind  string
		holds []plan.Hold
	}{{drift.KindDrift, rec.Holds}, {drift.KindInvariant, rec.Invariants}} {
		for _, h := range set.holds {
			if v, ok := current[h.ID.String()]; ok && plan.Drifted(h.Expected, v) {
				out = append(out, DriftFound{ID: h.ID, Kind: set.kind, Expected: h.Expected, Found: v})
			}
		}
	}
	return out
}

// driftRecords turns drift found into the records of the drift file; their
// time is fixed here, so that appending them again (a roll forward) finds
// them already written.
func driftRecords(o *run, rec *JobRecord, found []DriftFound) []drift.Record {
	now := o.now().UTC()
	recs := make([]drift.Record, len(found))
	for i, f := range found {
		recs[i] = drift.Record{Time: now, Node: o.Node, Job: rec.Job, User: rec.User, Knob: f.ID.Name,
			Scope: f.ID.Scope, Expected: string(f.Expected), Found: string(f.Found), Kind: f.Kind}
	}
	return recs
}

// fallbackValue is the config's [defaults] setting of a knob name.
func fallbackValue(o *run, name string) (string, bool) {
	return o.Config.Defaults.Setting(name)
}

// defaults are the config's [defaults], turned into knob values, by knob
// name: what a knob is restored to when no baseline was recorded.
func defaults(o *run, knobs map[string]knob.Knob) map[string]knob.Value {
	out := map[string]knob.Value{}
	for _, k := range knobs {
		if s, ok := o.Config.Defaults.Setting(k.ID().Name); ok {
			if v, err := k.Desired(s); err == nil {
				out[k.ID().Name] = v
			}
		}
	}
	return out
}
