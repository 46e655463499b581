package hook

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"gpuprep/lib/evidence"
	"gpuprep/lib/evidence/evfile"
	"gpuprep/lib/health"
	"gpuprep/lib/plan"
	"gpuprep/lib/textfmt"
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
// prolog's snapshot and end, and what drifted under the job (found).
func finishedEvidence(o *run, rec *JobRecord, end *jobEnd, found []DriftFound) evidence.Record {
	r := evidenceRecord(o, rec)
	r.Shared = mergeShared(rec.EvidenceShared, end.shared)
	r.Processes, r.Warnings = end.procs, end.warns
	for _, d := range found {
		r.Drift = append(r.Drift, fmt.Sprintf("%s (%s): held %s, found %s", d.ID, d.Kind, ShowValue(d.Expected), ShowValue(d.Found)))
	}
	r.Finish(*end.snap)
	return r
}

// addXids adds to r the job's Xids: those the epilog's health checks
// (out) attributed to it, and the application faults the health state
// counted for it while it ran (gpuprep-health reads the kernel log
// between jobs too); it says whether there were any.
func addXids(o *run, r *evidence.Record, job string, out *Outcome) bool {
	n := len(r.Xids)
	seen := map[string]uint64{} // the epilog's own, by bus
	if out.Health != nil {
		for _, x := range out.Health.XIDs {
			if slices.Contains(x.Jobs, job) {
				r.Xids = append(r.Xids, fmt.Sprintf("Xid %d on %s (%s): %s", x.Code, x.BusID, x.Severity, x.Text))
				seen[x.BusID]++
			}
		}
	}
	var st health.State
	if found, err := o.Spool.ReadJSON(health.StateFile, &st); found && err == nil {
		for _, bus := range slices.Sorted(maps.Keys(st.AppJobs)) {
			for _, j := range st.AppJobs[bus] {
				if j.Job == job && j.Count > seen[bus] { // more than the epilog read itself
					r.Xids = append(r.Xids, fmt.Sprintf("application Xids %s on %s: %d this boot while the job held the GPU",
						textfmt.JoinInts(j.Codes, ", "), bus, j.Count))
				}
			}
		}
	}
	return len(r.Xids) > n
}

// abandoned makes the evidence record of rec's job, released without its
// epilog (why), for releaseJob; nil when the prolog took no snapshot.
func abandoned(o *run, rec *JobRecord, why string) func([]DriftFound) *evidence.Record {
	if rec == nil || rec.Evidence == nil {
		return nil
	}
	return func([]DriftFound) *evidence.Record {
		r := abandonedEvidence(o, rec, why)
		return &r
	}
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

// recordedEvidence tells out what became of the epilog's record ev,
// written with the release (finishRelease): written again with the job's
// Xids where the health checks attributed any.
func recordedEvidence(o *run, ev *evidence.Record, job string, out *Outcome) {
	if o.evidence.name != "" && addXids(o, ev, job, out) {
		writeEvidence(o, *ev, out)
		return
	}
	out.warnAll(plan.KindNode, o.evidence.warns)
	if o.evidence.name != "" {
		out.noteEvidence(*ev)
	}
}

// writeEvidence writes r (saveEvidence) for this run's outcome: its
// warnings, the file's name, and a finished record for the metrics.
func writeEvidence(o *run, r evidence.Record, out *Outcome) {
	name, warns := saveEvidence(o, r)
	out.warnAll(plan.KindNode, warns)
	if name != "" {
		out.noteEvidence(r)
	}
}

// noteEvidence names r, written, in the outcome: its file, and a finished
// record for the metrics.
func (out *Outcome) noteEvidence(r evidence.Record) {
	out.Evidence, _ = evfile.RecordName(r.Job.ID, r.Job.Start)
	if !r.Running && r.End != nil {
		out.EvidenceRecord = &r
	}
}

// saveEvidence writes r to <state_dir>/jobs (evfile) and, for an ended
// job, removes the records [evidence] keep_days and keep_mb no longer
// keep. A record that cannot be written is a warning, never a failed run:
// it returns the file's name ("" when none was written) and the warnings.
func saveEvidence(o *run, r evidence.Record) (name string, warns []string) {
	if err := o.Spool.AllowTraverse(); err != nil {
		warns = append(warns, fmt.Sprintf("job evidence: %v: the job's user cannot reach it", err))
	}
	dir, err := evfile.Open(o.Spool.Dir())
	if err != nil {
		return "", append(warns, fmt.Sprintf("job evidence not written: %v", err))
	}
	defer dir.Close()
	name, err = dir.Write(r)
	var acl *evfile.ACLError
	switch {
	case errors.As(err, &acl):
		warns = append(warns, fmt.Sprintf("job evidence %s: the job's user cannot read it: %v", name, err))
	case err != nil:
		return "", append(warns, fmt.Sprintf("job evidence not written: %v", err))
	}
	if r.Running || !pruneDue(o) {
		return name, warns
	}
	ev := o.Config.Evidence
	removed, err := dir.Prune(ev.KeepDays, ev.KeepMB, o.now(), name)
	if err != nil {
		warns = append(warns, fmt.Sprintf("old job evidence not removed: %v", err))
	}
	if len(removed) > 0 {
		o.Log.Info("removed old job evidence", "files", len(removed), "keep_days", ev.KeepDays, "keep_mb", ev.KeepMB)
	}
	if err := o.Spool.WriteJSON(prunedFile, pruned{Time: o.now()}); err != nil {
		warns = append(warns, fmt.Sprintf("job evidence: %v", err))
	}
	return name, warns
}

// prunedFile (in the spool) says when the evidence records were last
// pruned: pruning stats every record, so an epilog prunes at most once
// every pruneEvery.
const (
	prunedFile = "evidence-pruned.json"
	pruneEvery = time.Hour
)

type pruned struct {
	Time time.Time `json:"time"`
}

// pruneDue says whether the last prune is pruneEvery old (or unknown, or
// in the future: a clock set back).
func pruneDue(o *run) bool {
	var p pruned
	found, err := o.Spool.ReadJSON(prunedFile, &p)
	if !found || err != nil {
		return true
	}
	age := o.now().Sub(p.Time)
	return age >= pruneEvery || age < 0
}
