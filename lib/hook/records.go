package hook

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gpuprep/lib/drift"
	"gpuprep/lib/evidence"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
	"gpuprep/lib/state"
)

// Spool file names.
const (
	journalFile = "journal.json"
	nodeFile    = "node.json"
	jobPrefix   = "job-"
)

func jobFile(job string) string { return jobPrefix + job + ".json" }

// NodeFile is node.json: the node's baseline, for the boot it was recorded
// in. Which jobs hold which knob is not kept here: the job records say it
// (one owner per fact), so losing this file loses no holder.
type NodeFile struct {
	// BootID is /proc/sys/kernel/random/boot_id when the baseline was
	// recorded; another one now means the node rebooted.
	BootID string `json:"boot_id,omitempty"`
	// Baseline is each knob's value before gpuprep first touched it in this
	// boot, by knob ID string; never overwritten by a value gpuprep set.
	Baseline map[string]knob.Value `json:"baseline"`
	// History holds the baselines of earlier boots, newest last.
	History []BootBaseline `json:"history,omitempty"`
}

// BootBaseline is the baseline of an earlier boot and how the freshly booted
// node differed from it.
type BootBaseline struct {
	BootID      string                `json:"boot_id"`
	Until       time.Time             `json:"until"` // when the reboot was noticed
	Baseline    map[string]knob.Value `json:"baseline"`
	Differences []string              `json:"differences,omitempty"`
}

// maxHistory bounds node.json's History.
const maxHistory = 5

func (n NodeFile) clone() NodeFile {
	out := n
	out.Baseline = maps.Clone(n.Baseline)
	if out.Baseline == nil {
		out.Baseline = map[string]knob.Value{}
	}
	out.History = slices.Clone(n.History)
	return out
}

// JobRecord is what a prolog leaves for its job's epilog (job-<id>.json).
type JobRecord struct {
	Job string `json:"job"`
	// SLUID is the job's SLURM_JOB_SLUID (Slurm 26.05 and later, which
	// names the job's cgroup after it); "" before.
	SLUID   string    `json:"sluid,omitempty"`
	User    string    `json:"user"`
	Profile string    `json:"profile"`
	Started time.Time `json:"started"`
	// BootID is the boot the prolog ran in.
	BootID string      `json:"boot_id,omitempty"`
	Holds  []plan.Hold `json:"holds"`
	// Baseline copies node.json's baseline of every held knob, so that the
	// baseline survives the loss of node.json while the job runs.
	Baseline   map[string]knob.Value `json:"baseline,omitempty"`
	GPUs       []string              `json:"gpus"` // UUIDs of the job's GPUs
	Invariants []plan.Hold           `json:"invariants,omitempty"`
	// DriftChecked is set once the job's drift was recorded: a retried
	// release (after a failed restore) does not record it again.
	DriftChecked bool `json:"drift_checked,omitempty"`
	// Fallback says why the job got another profile than it asked for
	// ("" when it got its own), for the user to see.
	Fallback string `json:"fallback,omitempty"`
	// UID is SLURM_JOB_UID: the job's evidence file is readable by it.
	UID int `json:"uid,omitempty"`
	// Evidence is the counters of the job's GPUs after the prolog applied
	// its settings ([evidence]; nil: off, or a job without GPUs), and
	// EvidenceShared why a GPU was not the job's alone then (evidence.go).
	Evidence       *evidence.Snapshot  `json:"evidence,omitempty"`
	EvidenceShared map[string][]string `json:"evidence_shared,omitempty"`
}

// Journal is written before a run changes any knob: the changes it is about
// to make (each with its previous value) and the spool before and after.
// What the next run does with it depends on Op:
//   - "prolog": rolled back. Every From is written back (last change
//     first), node.json and the job record are put back as they were.
//   - "epilog" (a job's release, by its epilog or because the job is dead):
//     rolled forward. The job is over, so its release completes: every To is
//     written, the drift records are appended, node.json and the job record
//     become NodeAfter and JobAfter.
//
// Either way every value is written whatever the knob holds now, so one
// journal covers every point a run can die at.
type Journal struct {
	Op      string        `json:"op"`
	Job     string        `json:"job"`
	BootID  string        `json:"boot_id,omitempty"`
	Started time.Time     `json:"started"`
	Changes []plan.Change `json:"changes"`
	// NodeBefore and JobBefore (nil: none) are the spool before the run.
	NodeBefore NodeFile   `json:"node_before"`
	JobBefore  *JobRecord `json:"job_before,omitempty"`
	// NodeAfter, JobAfter (nil: removed) and Drift are the release's
	// outcome, for a roll forward.
	NodeAfter NodeFile   `json:"node_after"`
	JobAfter  *JobRecord `json:"job_after,omitempty"`
	// Evidence is the released job's evidence record (evidence.go),
	// written with the drift records, so a release finished by the next
	// run writes it too.
	Evidence *evidence.Record `json:"evidence,omitempty"`
	Drift    []drift.Record   `json:"drift,omitempty"`
}

// Journal ops.
const (
	opProlog  = "prolog"
	opRelease = "epilog"
)

// writeJournal makes the journal durable before any change.
func writeJournal(sp *state.Spool, j *Journal) error {
	if err := sp.WriteJSON(journalFile, j); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// commit saves node.json and the job record (nil: removes it), then drops
// the journal. A crash before the journal is gone redoes or undoes all of
// it, as the journal says.
func commit(sp *state.Spool, node NodeFile, job string, rec *JobRecord) error {
	if err := sp.WriteJSON(nodeFile, node); err != nil {
		return err
	}
	if rec != nil {
		if err := sp.WriteJSON(jobFile(job), rec); err != nil {
			return err
		}
	} else if err := sp.Remove(jobFile(job)); err != nil {
		return err
	}
	return sp.Remove(journalFile)
}

// readJobRecords reads every job-<id>.json in the spool. A record that
// cannot be read is an error naming it: what that job holds is unknown, so
// nothing may be planned over it.
func readJobRecords(sp *state.Spool) (map[string]*JobRecord, error) {
	jobs, err := JobsHeld(sp)
	if err != nil {
		return nil, err
	}
	out := map[string]*JobRecord{}
	for _, job := range jobs {
		n := jobFile(job)
		var r JobRecord
		if _, err := sp.ReadJSON(n, &r); err != nil {
			return nil, fmt.Errorf("job record: %w (remove it once that job's settings are restored by hand)", err)
		}
		if r.Job != job {
			return nil, fmt.Errorf("job record %s names job %q", n, r.Job)
		}
		out[job] = &r
	}
	return out, nil
}

// JobsHeld lists the jobs whose records the spool holds (job-<id>.json):
// the jobs whose epilog has not run yet. gpuprep-health takes a node with
// none as idle.
func JobsHeld(sp *state.Spool) ([]string, error) {
	names, err := sp.List(jobPrefix)
	if err != nil {
		return nil, err
	}
	var jobs []string
	for _, n := range names {
		if job, ok := strings.CutSuffix(strings.TrimPrefix(n, jobPrefix), ".json"); ok && job != "" {
			jobs = append(jobs, job)
		}
	}
	return jobs, nil
}

// holdersOf is the jobs of jobs by the UUID of each GPU they hold (what
// lib/health attributes a GPU's Xids to), each GPU's jobs sorted.
func holdersOf(jobs map[string]*JobRecord) map[string][]string {
	out := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		for _, u := range jobs[id].GPUs {
			out[u] = append(out[u], id)
		}
	}
	return out
}

// GPUHolders reads the spool's job records and returns the jobs holding
// each GPU, by UUID (gpuprep-health's attribution of application Xids).
func GPUHolders(sp *state.Spool) (map[string][]string, error) {
	jobs, err := readJobRecords(sp)
	if err != nil {
		return nil, err
	}
	return holdersOf(jobs), nil
}
