package hook

import (
	"fmt"
	"time"

	"gpuprep/lib/plan"
	"gpuprep/lib/slurm"
)

// Released is a job whose settings a run let go of because the job is over
// but its epilog never ran.
type Released struct {
	Job    string `json:"job"`
	Kind   string `json:"kind"` // "reboot", "cgroup", "age" or "forced" (the metric's label)
	Reason string `json:"reason"`
	// Restored is what its release changed (a knob no other job holds
	// went back to its baseline).
	Restored []plan.Change `json:"restored,omitempty"`
}

// noteRestored records on job's Released entry what its release changed.
func noteRestored(out *Outcome, job string, changes []plan.Change) {
	for i := range out.Released {
		if out.Released[i].Job == job {
			out.Released[i].Restored = changes
		}
	}
}

// deadJobs finds the jobs with a record in the spool that are over although
// their epilog never ran (the node or slurmd crashed, or an epilog was
// killed and the node resumed), without asking slurmctld:
//   - every sign of the job is gone, and its prolog ran longer ago than
//     general.dead_job_grace (the time a job may run without a cgroup,
//     between its prolog and its first step): Slurm's cgroup tree is on
//     the node (a slurmstepd scope or v1 slurm tree where Slurm's own
//     daemons place it, slurm.FindJobCgroups; never a cgroup under
//     user.slice or in a subtree a user owns) but holds no job_<id>
//     cgroup nor, on Slurm 26.05, one named by the job's SLUID, and no
//     slurmstepd of the job runs (a root process whose exe is slurmstepd,
//     named "slurmstepd: [<id>.<step>]");
//   - its prolog ran longer ago than general.max_job_age (when set).
//
// Where either cannot be looked at completely (a folder or root process
// that cannot be read for any reason but "does not exist", a tree too
// large), no job is told dead but by age. except is the job of this run.
// Jobs of an earlier boot are handled before (dropBootStale).
func deadJobs(o *run, s *spoolState, except string) []Released {
	var ev *jobEvidence
	now := o.now()
	var dead []Released
	for _, job := range s.jobOrder() {
		if job == except {
			continue
		}
		rec := s.jobs[job]
		age := now.Sub(rec.Started)
		if max := o.Config.General.MaxJobAge; max > 0 && age > max {
			dead = append(dead, Released{Job: job, Kind: "age", Reason: fmt.Sprintf("its prolog ran %s ago, more than general.max_job_age (%s)", age.Round(time.Second), max)})
			continue
		}
		if age <= o.Config.General.DeadJobGrace {
			continue
		}
		if ev == nil {
			ev = o.jobEvidence()
		}
		if gone, where := ev.gone(job, rec.SLUID); gone {
			dead = append(dead, Released{Job: job, Kind: "cgroup", Reason: fmt.Sprintf("no cgroup %s under %s and no slurmstepd of the job: the job is over but its epilog did not run", slurm.JobCgroupName(job, rec.SLUID), where)})
		}
	}
	return dead
}

// jobEvidence is lookForJobs's, once per run (deadJobs and tidyRunDir
// both ask).
func (o *run) jobEvidence() *jobEvidence {
	if o.jobs == nil {
		o.jobs = lookForJobs(o)
	}
	return o.jobs
}

// jobEvidence is what a run found of Slurm's jobs: Slurm's daemons (root's
// slurmd and slurmstepd processes) and the job cgroups where they place
// them.
type jobEvidence struct {
	daemons *slurm.Daemons
	cg      *slurm.JobCgroups // nil when either could not be looked at
}

// lookForJobs scans /proc for Slurm's daemons and, anchored on them, looks
// for Slurm's job cgroups, once per run. Nothing of a user's (a process
// named like slurmd, cgroups named like Slurm's in the user's own
// delegated subtree) counts, nor can stop the search.
func lookForJobs(o *run) *jobEvidence {
	ev := &jobEvidence{}
	d, err := slurm.ScanDaemons(o.Root)
	if err != nil {
		o.Log.Warn("cannot look for Slurm's processes; dead jobs are told by age only", "err", err)
		return ev
	}
	cg, err := slurm.FindJobCgroups(o.Root, d)
	if err != nil {
		o.Log.Warn("cannot look for Slurm's job cgroups; dead jobs are told by age only", "err", err)
		return ev
	}
	ev.daemons, ev.cg = d, cg
	return ev
}

// alive says whether Slurm shows job running: its cgroup (job_<id>: its
// SLUID is in its record, and this job has none) or a slurmstepd of it.
// False where neither could be looked at.
func (ev *jobEvidence) alive(job string) bool {
	return ev.cg != nil && ev.cg.Present() && (ev.cg.Has(job, "") || ev.daemons.HasStepd(job))
}

// gone says whether every sign of job (with its SLUID, "" before Slurm
// 26.05) is gone; where names the folders looked in.
func (ev *jobEvidence) gone(job, sluid string) (bool, string) {
	if ev.cg == nil || !ev.cg.Present() || ev.cg.Has(job, sluid) || ev.daemons.HasStepd(job) {
		return false, ""
	}
	return true, ev.cg.Where()
}
