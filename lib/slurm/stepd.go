package slurm

import "strings"

// StepJob is the job a slurmstepd serves, from the command line Slurm gives
// it (src/slurmd/slurmstepd/slurmstepd.c, _set_job_log_prefix):
// "slurmstepd: [12.extern]", "[12.batch]", "[12.0]", "[12.0+1]" (a
// heterogeneous job's component) or "[12.batch stepmgr]" give "12". ok is
// false for any other, such as slurmd's "slurmstepd infinity" that holds
// slurmstepd.scope.
func StepJob(cmdline string) (job string, ok bool) {
	s := strings.TrimSpace(cmdline)
	if rest, found := strings.CutPrefix(s, StepdName+":"); found {
		s = strings.TrimSpace(rest)
	}
	s, found := strings.CutPrefix(s, "[")
	if !found {
		return "", false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i == len(s) || !strings.ContainsRune(".+] ", rune(s[i])) {
		return "", false
	}
	return s[:i], true
}

// HasStepd says whether a slurmstepd of job (its id, "12") runs.
func (d *Daemons) HasStepd(job string) bool {
	for _, p := range d.Stepd {
		if j, ok := StepJob(p.Cmdline); ok && j == job {
			return true
		}
	}
	return false
}
