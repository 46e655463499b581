package hook

import (
	"errors"
	"fmt"
	"slices"

	"gpuprep/lib/evidence"
	"gpuprep/lib/evidence/evfile"
	"gpuprep/lib/plan"
)

// jobEnd is what the epilog reads of the job's GPUs before restoring:
// their counters, the job's processes (accounting: turning it off clears
// them) and why a GPU was not the job's alone.
type jobEnd struct {
	snap   *evidence.Snapshot
	procs  []evidence.Process
	warns  []string
	shared map[string][]string
}

// endEvidence reads the job's end before restoring; nil when the prolog
// took no snapshot.
func endEvidence(o *run, s *spoolState, rec *JobRecord) *jobEnd {
	if rec.Evidence == nil {
		return nil
	}
	snap := snapshot(o, s.bootID, rec.GPUs)
	if snap == nil {
		return nil
	}
	e := &jobEnd{snap: snap, shared: sharedWhy(o, s, rec)}
	e.procs, e.warns = jobProcesses(o, rec, snap.Time)
	return e
}

// evidenceRecord is the running job's record: who, the prolog's snapshot,
// and the settings the job holds.
func evidenceRecord(o *run, rec *JobRecord) evidence.Record {
	r := evidence.Record{Format: evidence.Format, Running: true, Start: *rec.Evidence, Shared: rec.EvidenceShared,
		Job: evidence.Job{ID: rec.Job, SLUID: rec.SLUID, User: rec.User, UID: rec.UID, Node: o.Node, Profile: rec.Profile, Start: rec.Started}}
	for _, h := range rec.Holds {
		r.Settings = append(r.Settings, evidence.Setting{Knob: h.ID.String(), Value: ShowValue(h.Expected)})
	}
	return r
}

// finishedEvidence is the ended job's record: the difference between the
// prolog's snapshot and end, what drifted under the job and its Xids (out:
// the epilog's outcome).
func finishedEvidence(o *run, rec *JobRecord, end *jobEnd, out *Outcome) evidence.Record {
	r := evidenceRecord(o, rec)
	r.Shared = mergeShared(rec.EvidenceShared, end.shared)
	r.Processes, r.Warnings = end.procs, end.warns
	for _, d := range out.Drift {
		if d.Job == "" || d.Job == rec.Job {
			r.Drift = append(r.Drift, fmt.Sprintf("%s (%s): held %s, found %s", d.ID, d.Kind, ShowValue(d.Expected), ShowValue(d.Found)))
		}
	}
	if out.Health != nil {
		for _, x := range out.Health.XIDs {
			if slices.Contains(x.Jobs, rec.Job) {
				r.Xids = append(r.Xids, fmt.Sprintf("Xid %d on %s (%s): %s", x.Code, x.BusID, x.Severity, x.Text))
			}
		}
	}
	r.Finish(*end.snap)
	return r
}

// abandonedEvidence is the record of a job released because it is over
// but its epilog never ran (why): its figures are unknown.
func abandonedEvidence(o *run, rec *JobRecord, why string) evidence.Record {
	r := evidenceRecord(o, rec)
	r.Running = false
	r.Warnings = append(r.Warnings, fmt.Sprintf("%s (released by a later run at %s): what its GPUs did is unknown",
		why, o.now().UTC().Format("2006-01-02 15:04:05Z")))
	return r
}

// writeEvidence writes r to <state_dir>/jobs (evfile) and, for an ended
// job, removes the records [evidence] keep_days and keep_mb no longer
// keep. A record that cannot be written is a warning, never a failed run.
func writeEvidence(o *run, r evidence.Record, out *Outcome) {
	if err := o.Spool.AllowTraverse(); err != nil {
		out.warn(plan.KindNode, "job evidence: %v: the job's user cannot reach it", err)
	}
	dir, err := evfile.Open(o.Spool.Dir())
	if err != nil {
		out.warn(plan.KindNode, "job evidence not written: %v", err)
		return
	}
	defer dir.Close()
	name, err := dir.Write(r)
	var acl *evfile.ACLError
	switch {
	case errors.As(err, &acl):
		out.warn(plan.KindNode, "job evidence %s: the job's user cannot read it: %v", name, err)
	case err != nil:
		out.warn(plan.KindNode, "job evidence not written: %v", err)
		return
	}
	out.Evidence = name
	if r.Running {
		return
	}
	out.EvidenceRecord = &r
	ev := o.Config.Evidence
	removed, err := dir.Prune(ev.KeepDays, ev.KeepMB, o.now(), name)
	if err != nil {
		out.warn(plan.KindNode, "old job evidence not removed: %v", err)
	}
	if len(removed) > 0 {
		o.Log.Info("removed old job evidence", "files", len(removed), "keep_days", ev.KeepDays, "keep_mb", ev.KeepMB)
	}
}
