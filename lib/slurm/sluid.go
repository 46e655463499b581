package slurm

import "strings"

// A SLUID is the cluster-unique job id Slurm 26.05 adds beside the job's
// number: "s" and 13 Crockford base-32 digits (src/common/sluid.c,
// sluid2str), such as "s6KSM8TX3WZG00". slurmd gives it to the prolog and
// epilog as SLURM_JOB_SLUID, and the cgroup/v2 plugin of 26.05 names the
// job's cgroup after it (<slurmstepd scope>/<SLUID>) where earlier
// releases made job_<id>.

// sluidDigits are Crockford's base-32 digits, as Slurm writes them.
const sluidDigits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// sluidLen is the length of a SLUID: "s" and 13 digits.
const sluidLen = 14

// ParseSLUID gives the SLUID s names in the form Slurm writes it (lower
// "s", upper-case digits). Like Slurm's str2sluid it takes either case; it
// says false for anything else.
func ParseSLUID(s string) (string, bool) {
	if len(s) != sluidLen || (s[0] != 's' && s[0] != 'S') {
		return "", false
	}
	digits := strings.ToUpper(s[1:])
	for i := 0; i < len(digits); i++ {
		if strings.IndexByte(sluidDigits, digits[i]) < 0 {
			return "", false
		}
	}
	return "s" + digits, true
}

// isSLUIDCgroup says whether a cgroup's name is a job's SLUID exactly as the
// cgroup/v2 plugin writes it.
func isSLUIDCgroup(name string) bool {
	s, ok := ParseSLUID(name)
	return ok && s == name
}
