package hook

import (
	"fmt"
	"time"

	"gpuprep/lib/slurm"
)

// Released is a job whose settings a run let go of because the job is over
// but its epilog never ran.
type Released struct {
	Job    string `json:"job"`
	Kind   string `json:"kind"` // "reboot", "cgroup" or "age" (the metric's label)
	Reason string `json:"reason"`
}

// deadJobs finds the jobs with a record in the spool that are over although
// their epilog never ran (the node or slurmd crashed, or an epilog was
// killed and the node resumed), without asking slurmctld:
//   - Slurm's cgroup tree is on the node but has no cgroup for the job, and
//     its prolog ran longer ago than general.dead_job_grace (the time a job
//     may run without one, between its prolog and its first step);
//   - its prolog ran longer ago than general.max_job_age (when set).
//
// except is the job of this run. Jobs of an earlier boot are handled before
// (dropBootStale).
func deadJobs(o *Options, s *spoolState, except string) []Released {
	var cg *slurm.JobCgroups
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
		if cg == nil {
			var err error
			if cg, err = slurm.FindJobCgroups(o.Root); err != nil {
				o.Log.Warn("cannot look for Slurm's job cgroups; dead jobs are told by age only", "err", err)
				cg = &slurm.JobCgroups{}
			}
		}
		if cg.Present() && !cg.Has(job) {
			dead = append(dead, Released{Job: job, Kind: "cgroup", Reason: fmt.Sprintf("no cgroup job_%s under %s: the job is over but its epilog did not run", job, cg.Where())})
		}
	}
	return dead
}
