package hook

import (
	"fmt"
	"time"

	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
	"gpuprep/lib/state"
)

// Spool file names.
const (
	journalFile = "journal.json"
	nodeFile    = "node.json"
)

func jobFile(job string) string { return "job-" + job + ".json" }

// Journal is written before a run changes anything: the changes it is about
// to make (with each previous value) and the spool state before it. Recovery
// writes every From value back, restores the node state and the job record,
// and removes the journal. Writing back a From value that was never changed
// is harmless, so one journal covers every point a run can die at.
type Journal struct {
	Op         string         `json:"op"` // "prolog" or "epilog"
	Job        string         `json:"job"`
	Started    time.Time      `json:"started"`
	Changes    []plan.Change  `json:"changes"`
	NodeBefore plan.NodeState `json:"node_before"`
	// JobBefore is the job record before the run (nil: there was none).
	JobBefore *JobRecord `json:"job_before,omitempty"`
}

// JobRecord is what a prolog leaves for its job's epilog (job-<id>.json).
type JobRecord struct {
	Job        string      `json:"job"`
	User       string      `json:"user"`
	Profile    string      `json:"profile"`
	Started    time.Time   `json:"started"`
	Holds      []plan.Hold `json:"holds"`
	GPUs       []string    `json:"gpus"` // UUIDs of the job's GPUs
	Invariants []plan.Hold `json:"invariants,omitempty"`
}

func loadNode(sp *state.Spool) (plan.NodeState, error) {
	var st plan.NodeState
	if _, err := sp.ReadJSON(nodeFile, &st); err != nil {
		return st, err
	}
	if st.Baseline == nil {
		st.Baseline = map[string]knob.Value{}
	}
	if st.Holders == nil {
		st.Holders = map[string]plan.Holding{}
	}
	return st, nil
}

func loadJob(sp *state.Spool, job string) (*JobRecord, error) {
	var r JobRecord
	found, err := sp.ReadJSON(jobFile(job), &r)
	if err != nil || !found {
		return nil, err
	}
	return &r, nil
}

// writeJournal makes the journal durable before any change.
func writeJournal(sp *state.Spool, j *Journal) error {
	crashPoint()
	if err := sp.WriteJSON(journalFile, j); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	crashPoint()
	return nil
}

// commit saves the new node state and job record (nil: remove it), then
// drops the journal. A crash before the journal is gone rolls all of it back.
func commit(sp *state.Spool, st plan.NodeState, job string, rec *JobRecord) error {
	if err := sp.WriteJSON(nodeFile, st); err != nil {
		return err
	}
	crashPoint()
	if rec != nil {
		if err := sp.WriteJSON(jobFile(job), rec); err != nil {
			return err
		}
	} else if err := sp.Remove(jobFile(job)); err != nil {
		return err
	}
	crashPoint()
	if err := sp.Remove(journalFile); err != nil {
		return err
	}
	crashPoint()
	return nil
}

// dropStale removes holders whose job has no record: a run that died between
// writing the node state and the job record (no journal covers a run that
// changes no knob). Under the node lock every live holder has a record, so
// this never drops a running job. except names the job being run.
func dropStale(o *Options, st *plan.NodeState, except string) {
	live := map[string]bool{except: true}
	for key, h := range st.Holders {
		var keep []string
		for _, j := range h.Jobs {
			if _, known := live[j]; !known {
				found, err := o.Spool.ReadJSON(jobFile(j), &JobRecord{})
				live[j] = found || err != nil
			}
			if live[j] {
				keep = append(keep, j)
			} else {
				o.Log.Warn("dropping a stale holder", "knob", key, "job", j)
			}
		}
		if len(keep) == 0 {
			delete(st.Holders, key)
		} else {
			h.Jobs = keep
			st.Holders[key] = h
		}
	}
}
