package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"gpuprep/lib/host"
)

// JobCgroups is where Slurm keeps the cgroups of the jobs running on this
// node, found once per run. A job has a cgroup for as long as any of its
// steps runs (with PrologFlags=Contain, its extern step holds one from the
// job's start to its end), so a job with none is over.
//
//   - cgroup v2 (cgroup/v2 plugin): <slurmd's parent>/slurmstepd.scope/job_<id>,
//     by default /sys/fs/cgroup/system.slice/slurmstepd.scope; with several
//     slurmd per host (and in Debian's build), <nodename>_slurmstepd.scope.
//     Slurm 26.05 names the job's cgroup after its SLUID instead
//     (slurmstepd.scope/s6KSM8TX3WZG00, sluid.go). slurmd may sit in a
//     nested slice (Slice= in a drop-in) or inside a container's cgroup,
//     so the scope may be at any depth.
//   - cgroup v1: /sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_<id> in each
//     controller Slurm uses (slurm_<nodename> with several slurmd).
//
// FindJobCgroups walks every hierarchy for them, at any depth.
type JobCgroups struct {
	// Scopes are Slurm's slurmstepd scopes (cgroup v2; node paths, sorted).
	Scopes []string
	// V1Roots are Slurm's cgroup v1 trees, slurm and slurm_<node> (node
	// paths, sorted).
	V1Roots []string
	// Jobs are every job cgroup: job_<id>, and <SLUID> directly in a
	// slurmstepd scope (node paths, sorted).
	Jobs []string
	// ids are the job ids and SLUIDs of Jobs.
	ids map[string]bool
}

// Bounds of the walk, so that a huge cgroup tree cannot stall a prolog:
// more folders, or deeper ones, are an error (nothing can be told).
const (
	maxCgroupDirs  = 20000
	maxCgroupDepth = 24
)

// Node paths of the cgroup mounts.
const (
	cgroupMount = "/sys/fs/cgroup"
	// unifiedMarker exists only where /sys/fs/cgroup is cgroup v2 alone.
	unifiedMarker = "/sys/fs/cgroup/cgroup.controllers"
)

// StepdScopeSuffix ends the name of Slurm's slurmstepd scope (cgroup v2).
const StepdScopeSuffix = "slurmstepd.scope"

// ErrCgroupTreeTooLarge is FindJobCgroups' error for a tree past its bounds.
var ErrCgroupTreeTooLarge = errors.New("cgroup tree too large to search")

// FindJobCgroups looks for Slurm's cgroups under root's /sys/fs/cgroup: in
// the unified hierarchy where /sys/fs/cgroup is cgroup v2, else in every
// hierarchy mounted below it (v1 controllers, and the hybrid layout's
// unified/), at any depth. It never follows a symlink (v1's cpu ->
// cpu,cpuacct) and does not descend into a job's cgroup. A folder that
// vanishes during the walk is skipped; any other error (permission denied,
// I/O) is returned, as is a tree past the walk's bounds: then which jobs
// have a cgroup cannot be told.
func FindJobCgroups(root host.Root) (*JobCgroups, error) {
	jc := &JobCgroups{ids: map[string]bool{}}
	v2, err := root.ExistsErr(unifiedMarker)
	if err != nil {
		return nil, fmt.Errorf("slurm cgroups: %w", err)
	}
	tops := []string{cgroupMount}
	if !v2 {
		ents, err := os.ReadDir(root.Path(cgroupMount))
		if errors.Is(err, fs.ErrNotExist) {
			return jc, nil // no cgroupfs at all
		}
		if err != nil {
			return nil, fmt.Errorf("slurm cgroups: %w", err)
		}
		tops = tops[:0]
		for _, e := range ents {
			if e.IsDir() {
				tops = append(tops, path.Join(cgroupMount, e.Name()))
			}
		}
	}
	w := &cgroupWalk{root: root, jc: jc}
	for _, top := range tops {
		if err := w.walk(top, 0); err != nil {
			return nil, err
		}
	}
	slices.Sort(jc.Scopes)
	slices.Sort(jc.V1Roots)
	slices.Sort(jc.Jobs)
	return jc, nil
}

// cgroupWalk is one FindJobCgroups walk.
type cgroupWalk struct {
	root host.Root
	jc   *JobCgroups
	dirs int
}

// walk lists the child cgroups of dir (a node path, depth levels below its
// hierarchy's root) and goes down each that is not a job's.
func (w *cgroupWalk) walk(dir string, depth int) error {
	ents, err := os.ReadDir(w.root.Path(dir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		return fmt.Errorf("slurm cgroups: %w", err)
	}
	inScope := strings.HasSuffix(dir, StepdScopeSuffix)
	for _, e := range ents {
		if !e.IsDir() { // files, and symlinks (never followed)
			continue
		}
		name, p := e.Name(), dir+"/"+e.Name()
		if w.dirs++; w.dirs > maxCgroupDirs {
			return fmt.Errorf("slurm cgroups: more than %d cgroups under %s: %w", maxCgroupDirs, cgroupMount, ErrCgroupTreeTooLarge)
		}
		id, ok := JobCgroupID(name)
		if !ok && inScope && isSLUIDCgroup(name) {
			id, ok = name, true
		}
		if ok {
			w.jc.Jobs = append(w.jc.Jobs, p)
			w.jc.ids[id] = true
			continue // its steps and tasks
		}
		switch {
		case strings.HasSuffix(name, StepdScopeSuffix):
			w.jc.Scopes = append(w.jc.Scopes, p)
		case name == "slurm" || strings.HasPrefix(name, "slurm_"):
			w.jc.V1Roots = append(w.jc.V1Roots, p)
		}
		if depth+1 >= maxCgroupDepth {
			return fmt.Errorf("slurm cgroups: %s is more than %d levels deep: %w", p, maxCgroupDepth, ErrCgroupTreeTooLarge)
		}
		if err := w.walk(p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// JobCgroupID is the job id of a job cgroup's name ("job_12" gives "12").
func JobCgroupID(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, "job_")
	if !ok || id == "" {
		return "", false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return id, true
}

// Present says whether Slurm's cgroup tree is on the node (a slurmstepd
// scope, a v1 slurm tree, or any job cgroup), so that a job's missing
// cgroup means something.
func (jc *JobCgroups) Present() bool {
	return jc != nil && len(jc.Scopes)+len(jc.V1Roots)+len(jc.Jobs) > 0
}

// Where names the folders Slurm's job cgroups were looked for in, for
// messages.
func (jc *JobCgroups) Where() string {
	var in []string
	if jc != nil {
		in = append(slices.Clone(jc.Scopes), jc.V1Roots...)
	}
	switch {
	case len(in) == 0:
		return cgroupMount
	case len(in) > 3:
		return strings.Join(in[:3], ", ") + fmt.Sprintf(" and %d more", len(in)-3)
	}
	return strings.Join(in, ", ")
}

// Has says whether job has a cgroup: job_<id> anywhere in any hierarchy,
// or, when sluid (the job's SLURM_JOB_SLUID) is not "", a cgroup of that
// name in a slurmstepd scope (Slurm 26.05).
func (jc *JobCgroups) Has(job, sluid string) bool {
	return jc != nil && (jc.ids[job] || (sluid != "" && jc.ids[sluid]))
}

// JobCgroupName is the name of a job's cgroup as Slurm makes it: its SLUID
// where Slurm gave one (26.05), else job_<id>.
func JobCgroupName(job, sluid string) string {
	if sluid != "" {
		return sluid
	}
	return "job_" + job
}

// ProcInJob says whether a /proc/<pid>/cgroup file (cgroupFile, its
// content) puts the process in the cgroup of job (its SLUID, "" before
// Slurm 26.05): any hierarchy's path with a folder named as JobCgroupName
// or job_<id> names it.
func ProcInJob(cgroupFile, job, sluid string) bool {
	for _, l := range strings.Split(cgroupFile, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, dir := range strings.Split(parts[2], "/") {
			if id, ok := JobCgroupID(dir); (ok && id == job) || (sluid != "" && dir == sluid) {
				return true
			}
		}
	}
	return false
}
