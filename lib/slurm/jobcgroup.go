package slurm

import (
	"fmt"
	"path"

	"gpuprep/lib/host"
)

// JobCgroups is where Slurm keeps the cgroups of the jobs running on this
// node, found once per run. A job has a cgroup for as long as any of its
// steps runs (with PrologFlags=Contain, its extern step holds one from the
// job's start to its end), so a job with none is over.
//
//   - cgroup v2 (cgroup/v2 plugin): <slurmd's parent>/slurmstepd.scope/job_<id>,
//     by default /sys/fs/cgroup/system.slice/slurmstepd.scope; with several
//     slurmd per host, <nodename>_slurmstepd.scope.
//   - cgroup v1: /sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_<id> in each
//     controller Slurm uses (slurm_<nodename> with several slurmd).
type JobCgroups struct {
	root host.Root
	// parents are the folders that hold job_<id> folders: slurmstepd
	// scopes (v2) and uid_<uid> folders (v1).
	parents []string
	// present is false when no Slurm cgroup tree is on the node (Slurm
	// runs without cgroups, or not here): then nothing can be told.
	present bool
}

// Glob patterns for Slurm's cgroup folders, node paths.
var (
	v2Scopes = []string{
		"/sys/fs/cgroup/*slurmstepd.scope",
		"/sys/fs/cgroup/*/*slurmstepd.scope",
		"/sys/fs/cgroup/*/*/*slurmstepd.scope",
	}
	// v1Roots are Slurm's folders in each v1 controller hierarchy; the
	// names are exact, so that systemd's units (slurmd.service) never match.
	v1Roots = []string{"/sys/fs/cgroup/*/slurm", "/sys/fs/cgroup/*/slurm_*"}
)

// unifiedMarker exists only where /sys/fs/cgroup is cgroup v2 alone.
const unifiedMarker = "/sys/fs/cgroup/cgroup.controllers"

// FindJobCgroups looks for Slurm's cgroup tree under root's /sys/fs/cgroup.
func FindJobCgroups(root host.Root) (*JobCgroups, error) {
	jc := &JobCgroups{root: root}
	for _, pat := range v2Scopes {
		m, err := root.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("slurm cgroups: %w", err)
		}
		jc.parents = append(jc.parents, m...)
	}
	if root.Exists(unifiedMarker) {
		jc.present = len(jc.parents) > 0
		return jc, nil
	}
	var v1 []string
	for _, pat := range v1Roots {
		m, err := root.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("slurm cgroups: %w", err)
		}
		v1 = append(v1, m...)
	}
	for _, r := range v1 {
		jc.present = true // the hierarchy exists even while no job runs
		uids, err := root.Glob(path.Join(r, "uid_*"))
		if err != nil {
			return nil, fmt.Errorf("slurm cgroups: %w", err)
		}
		jc.parents = append(jc.parents, uids...)
	}
	jc.present = jc.present || len(jc.parents) > 0
	return jc, nil
}

// Present says whether Slurm's cgroup tree is on the node, so that a
// job's missing cgroup means something.
func (jc *JobCgroups) Present() bool { return jc.present }

// Where is the folder Slurm's job cgroups are looked for in, for messages.
func (jc *JobCgroups) Where() string {
	if len(jc.parents) == 0 {
		return "/sys/fs/cgroup"
	}
	return jc.parents[0]
}

// Has says whether job has a cgroup now (job_<id> in any of Slurm's
// folders).
func (jc *JobCgroups) Has(job string) bool {
	for _, p := range jc.parents {
		if jc.root.Exists(path.Join(p, "job_"+job)) {
			return true
		}
	}
	return false
}
