package hook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gpuprep/lib/plan"
	"gpuprep/lib/state"
)

// ReleasedForced is the Kind of a job RestoreAll let go of although it
// could not tell the job over (--force).
const ReleasedForced = "forced"

// RestoreAll puts the node back at its baseline without waiting for the
// jobs' epilogs (gpuprep-epilog --restore-all): before the package is
// removed, or when a node leaves Slurm. Like any run it first finishes an
// interrupted run and releases the jobs that are over (prepare: no cgroup,
// no slurmstepd, an earlier boot). A job that still looks alive is
// released only with force; without it RestoreAll releases nothing of
// such jobs and fails naming them, so the admin drains the node and waits
// for them, or forces. A knob no job holds any more goes back to its
// baseline as in an epilog.
func RestoreAll(ctx context.Context, opts *Options, force bool) (*Outcome, error) {
	o := newRun(opts)
	defer closeRunDir(o)
	out := &Outcome{Op: "restore-all", DryRun: o.DryRun}
	s, err := prepare(ctx, o, out, "")
	if err != nil {
		return out, err
	}
	alive := s.jobOrder()
	if len(alive) > 0 && !force {
		return out, nodeErrorf("%s still hold settings and do not look over: drain the node and wait for them to end (their epilogs restore it), or add --force to restore it under them", describeJobs(s, alive))
	}
	for _, job := range alive {
		rec := s.jobs[job]
		why := "released by gpuprep-epilog --restore-all --force while the job looked alive"
		out.Released = append(out.Released, Released{Job: job, Kind: ReleasedForced, Reason: why})
		if o.DryRun {
			continue
		}
		o.Log.Warn("releasing a job by force", "forced_job", job, "user", rec.User)
		// other: its drift is reported under its id, its notices go.
		if err := releaseJob(ctx, o, s, rec, out, true, abandoned(o, rec, why)); err != nil {
			return out, err
		}
	}
	return out, nil
}

// describeJobs names jobs as "jobs 12 (alice), 13 (bob)".
func describeJobs(s *spoolState, jobs []string) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = fmt.Sprintf("%s (%s)", j, s.jobs[j].User)
	}
	noun := "jobs "
	if len(jobs) == 1 {
		noun = "job "
	}
	return noun + strings.Join(parts, ", ")
}

// Holding is what holds settings on the node, for gpuprep-epilog --held
// and the package's removal: the jobs with a record in the spool, and an
// interrupted run's journal.
type Holding struct {
	Jobs        []HeldJob `json:"jobs"`
	Interrupted bool      `json:"interrupted"` // a journal: a run was cut short
}

// HeldJob is one job that holds settings.
type HeldJob struct {
	Job   string   `json:"job"`
	User  string   `json:"user"`
	Since string   `json:"since"` // its prolog's time, RFC 3339
	Knobs []string `json:"knobs"` // "cpu_governor@node", sorted
}

// Any says whether anything holds settings.
func (h Holding) Any() bool { return len(h.Jobs) > 0 || h.Interrupted }

// Held reads what holds settings from the spool, read only: it takes no
// lock and changes nothing, so it can run while a hook runs.
func Held(sp *state.Spool) (Holding, error) {
	var h Holding
	var j Journal
	found, err := sp.ReadJSON(journalFile, &j)
	if err != nil {
		return h, err
	}
	h.Interrupted = found
	recs, err := readJobRecords(sp)
	if err != nil {
		return h, err
	}
	for _, job := range slices.Sorted(maps.Keys(recs)) {
		rec := recs[job]
		h.Jobs = append(h.Jobs, HeldJob{Job: job, User: rec.User, Since: rec.Started.UTC().Format("2006-01-02T15:04:05Z"), Knobs: holdNames(rec.Holds)})
	}
	return h, nil
}

// holdNames are the holds' knob IDs, sorted.
func holdNames(holds []plan.Hold) []string {
	names := make([]string, 0, len(holds))
	for _, h := range holds {
		names = append(names, h.ID.String())
	}
	slices.Sort(names)
	return names
}
