package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"gpuprep/lib/host"
)

// JobCgroups is where Slurm keeps the cgroups of the jobs running on this
// node, found once per run. A job has a cgroup for as long as any of its
// steps runs (with PrologFlags=Contain, its extern step holds one from the
// job's start to its end), so a job with none is over.
//
//   - cgroup v2 (cgroup/v2 plugin): <slice>/slurmstepd.scope/job_<id>; with
//     several slurmd per host (and in Debian's build)
//     <slice>/<nodename>_slurmstepd.scope. Slurm 26.05 names the job's
//     cgroup after its SLUID instead (slurmstepd.scope/s6KSM8TX3WZG00,
//     sluid.go). The slice is system.slice (cgroup.conf's CgroupSlice from
//     Slurm 25.11, which an admin sets with slurmd's own Slice=) below the
//     cgroup of PID 1's parent: normally /sys/fs/cgroup/system.slice, next
//     to slurmd.service; in a container, the container's system.slice.
//   - cgroup v1: slurm/uid_<uid>/job_<id> (slurm_<nodename> with several
//     slurmd) at the root of each controller's hierarchy Slurm uses, as
//     slurmd's cgroup namespace sees it.
//
// FindJobCgroups finds them from where Slurm's own processes run; nothing
// a user can make (their delegated subtree under user.slice, or any cgroup
// folder a user owns) counts.
type JobCgroups struct {
	// Scopes are Slurm's slurmstepd scopes (cgroup v2; node paths, sorted).
	Scopes []string
	// V1Roots are Slurm's cgroup v1 trees, slurm and slurm_<node> (node
	// paths, sorted).
	V1Roots []string
	// Jobs are every job cgroup: job_<id> and <SLUID> directly in a
	// slurmstepd scope, job_<id> in a v1 tree's uid_<uid> (node paths,
	// sorted).
	Jobs []string
	// ids are the job ids and SLUIDs of Jobs.
	ids map[string]bool
}

// maxCgroupDirs bounds the folders and entries FindJobCgroups reads, so
// that a huge tree cannot stall a prolog; more is an error (nothing can be
// told). It reads only folders that root alone can fill (the ancestors of
// Slurm's daemons' cgroups, Slurm's scopes and trees), never a user's. A
// variable only so that tests can lower it.
var maxCgroupDirs = 20000

// Node paths of the cgroup mounts.
const (
	cgroupMount = "/sys/fs/cgroup"
	// unifiedMarker exists only where /sys/fs/cgroup is cgroup v2 alone.
	unifiedMarker = "/sys/fs/cgroup/cgroup.controllers"
	// hybridUnified is the hybrid layout's cgroup v2 mount, where Slurm
	// keeps nothing (its cgroup/v2 plugin refuses the hybrid layout).
	hybridUnified = "unified"
)

// StepdScopeSuffix ends the name of Slurm's slurmstepd scope (cgroup v2).
const StepdScopeSuffix = "slurmstepd.scope"

// defaultSlice is the slice Slurm's cgroup/v2 plugin puts its scope in
// (below PID 1's parent cgroup) unless cgroup.conf's CgroupSlice says
// otherwise.
const defaultSlice = "system.slice"

// userSlice is systemd's slice of user sessions and user managers; the
// managers' cgroups (user@<uid>.service) are delegated to their users.
const userSlice = "user.slice"

// ErrCgroupTreeTooLarge is FindJobCgroups' error for a tree past its bounds.
var ErrCgroupTreeTooLarge = errors.New("cgroup tree too large to search")

// IsStepdScope says whether a cgroup's name is one Slurm's cgroup/v2 plugin
// gives its scope: slurmstepd.scope, or <nodename>_slurmstepd.scope.
func IsStepdScope(name string) bool {
	node, ok := strings.CutSuffix(name, "_"+StepdScopeSuffix)
	return name == StepdScopeSuffix || ok && node != ""
}

// IsV1Root says whether a cgroup's name is one Slurm's cgroup/v1 plugin
// gives its tree: slurm, or slurm_<nodename>.
func IsV1Root(name string) bool {
	node, ok := strings.CutPrefix(name, "slurm_")
	return name == "slurm" || ok && node != ""
}

// isUIDCgroup says whether a name is a v1 tree's uid_<uid>.
func isUIDCgroup(name string) bool {
	uid, ok := strings.CutPrefix(name, "uid_")
	return ok && uid != "" && strings.Trim(uid, "0123456789") == ""
}

// FindJobCgroups finds Slurm's cgroups under root's /sys/fs/cgroup, placed
// as Slurm places them and anchored on Slurm's own processes (daemons, from
// ScanDaemons: root's slurmd and slurmstepd, with their /proc/<pid>/cgroup;
// nil for none):
//
//   - cgroup v2 (/sys/fs/cgroup/cgroup.controllers exists): a scope
//     (IsStepdScope) that holds a daemon's cgroup (slurmstepd infinity in
//     <scope>/system, each step's in <scope>/job_<id>/step_<s>/slurm, a
//     slurmd started by hand in <scope>/slurmd); one next to slurmd's
//     cgroup or next to any cgroup above it (system.slice/slurmstepd.scope
//     beside system.slice/slurmd.service; a nested slice; a container's
//     system.slice); one in system.slice below PID 1's parent cgroup
//     (/proc/1/cgroup), where Slurm's plugin computes it.
//   - cgroup v1 (every hierarchy mounted below /sys/fs/cgroup but the
//     hybrid layout's unified/): a tree (IsV1Root) at the hierarchy's root,
//     one that holds a daemon's cgroup in it, or one next to a cgroup
//     above slurmd's (slurmd in a container, seen from outside).
//
// A candidate under user.slice, or whose folder is owned by another user
// than the hierarchy's root folder (a subtree systemd delegated to a user,
// whose folders the user makes), is never Slurm's; neither is one reached
// through a symlink. Job cgroups are read only inside Slurm's scopes and
// trees. Folders that do not exist are skipped; any other error (permission
// denied, I/O) is returned, as is a search past maxCgroupDirs: then which
// jobs have a cgroup cannot be told.
func FindJobCgroups(root host.Root, daemons *Daemons) (*JobCgroups, error) {
	s := &cgroupSearch{root: root, jc: &JobCgroups{ids: map[string]bool{}}, seen: map[string]bool{}}
	if daemons != nil {
		s.slurmd, s.all = daemons.Slurmd, slices.Concat(daemons.Slurmd, daemons.Stepd)
	}
	v2, err := root.ExistsErr(unifiedMarker)
	if err != nil {
		return nil, fmt.Errorf("slurm cgroups: %w", err)
	}
	if v2 {
		err = s.unified()
	} else {
		err = s.legacy()
	}
	if err != nil {
		return nil, fmt.Errorf("slurm cgroups: %w", err)
	}
	slices.Sort(s.jc.Scopes)
	slices.Sort(s.jc.V1Roots)
	slices.Sort(s.jc.Jobs)
	return s.jc, nil
}

// cgroupSearch is one FindJobCgroups search.
type cgroupSearch struct {
	root host.Root
	jc   *JobCgroups
	// slurmd and all are the root slurmd processes, and those with every
	// root slurmstepd.
	slurmd, all []Daemon
	// read counts the folders and entries read (maxCgroupDirs); seen the
	// candidates already judged (node paths).
	read int
	seen map[string]bool
}

// hierarchy is one cgroup hierarchy being searched.
type hierarchy struct {
	// mount is its root folder's node path; owner that folder's owner,
	// whom every folder of Slurm's belongs to.
	mount string
	owner uint32
	// isRoot says whether a name is Slurm's top cgroup in it (a scope,
	// a v1 tree), and addJobs reads the job cgroups of one.
	isRoot  func(string) bool
	addJobs func(s *cgroupSearch, top string) error
	// paths gives a daemon's cgroup in it (its /proc/<pid>/cgroup line).
	paths func(Daemon) (string, bool)
}

// unified searches cgroup v2 at /sys/fs/cgroup.
func (s *cgroupSearch) unified() error {
	h, err := s.open(cgroupMount)
	if err != nil || h == nil {
		return err
	}
	h.isRoot, h.addJobs = IsStepdScope, (*cgroupSearch).addScopeJobs
	h.paths = func(d Daemon) (string, bool) { return cgroupPath(d.Cgroups[""]) }
	cands, err := s.anchored(h)
	if err != nil {
		return err
	}
	slice, err := s.initSlice()
	if err != nil {
		return err
	}
	if slice != "" {
		more, err := s.children(h, slice, h.isRoot)
		if err != nil {
			return err
		}
		cands = append(cands, more...)
	}
	return s.judge(h, cands)
}

// legacy searches every cgroup v1 hierarchy below /sys/fs/cgroup.
func (s *cgroupSearch) legacy() error {
	ents, err := os.ReadDir(s.root.Path(cgroupMount))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no cgroupfs at all
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == hybridUnified { // symlinks (cpu -> cpu,cpuacct) are never followed
			continue
		}
		if err := s.legacyHierarchy(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// legacyHierarchy searches the v1 hierarchy mounted at /sys/fs/cgroup/<dir>.
func (s *cgroupSearch) legacyHierarchy(dir string) error {
	h, err := s.open(cgroupMount + "/" + dir)
	if err != nil || h == nil {
		return err
	}
	h.isRoot, h.addJobs = IsV1Root, (*cgroupSearch).addV1Jobs
	h.paths = func(d Daemon) (string, bool) { return v1Path(d, dir) }
	cands, err := s.anchored(h)
	if err != nil {
		return err
	}
	top, err := s.children(h, "/", h.isRoot) // Slurm's place, slurmd known or not
	if err != nil {
		return err
	}
	return s.judge(h, append(cands, top...))
}

// open reads a hierarchy's root folder's owner (nil when it went, or is
// no folder).
func (s *cgroupSearch) open(mount string) (*hierarchy, error) {
	owner, dir, err := s.owner(mount)
	if err != nil || !dir {
		return nil, err
	}
	return &hierarchy{mount: mount, owner: owner}, nil
}

// owner is the owner of a folder (a node path), never following a symlink;
// dir is false when p does not exist or is no folder.
func (s *cgroupSearch) owner(p string) (owner uint32, dir bool, err error) {
	fi, err := os.Lstat(s.root.Path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return 0, false, nil
	}
	return st.Uid, true, nil
}

// anchored lists the candidates Slurm's daemons place in h (cgroup paths,
// "/system.slice/slurmstepd.scope"): every cgroup named as Slurm's top
// (h.isRoot) on a daemon's path, and every such child of slurmd's cgroup
// and of each cgroup above it.
func (s *cgroupSearch) anchored(h *hierarchy) ([]string, error) {
	var cands []string
	for _, d := range s.all {
		p, ok := h.paths(d)
		if !ok {
			continue
		}
		for q := p; q != "/"; q = path.Dir(q) {
			if h.isRoot(path.Base(q)) {
				cands = append(cands, q)
			}
		}
	}
	for _, d := range s.slurmd {
		p, ok := h.paths(d)
		if !ok {
			continue
		}
		for q := p; ; q = path.Dir(q) {
			more, err := s.children(h, q, h.isRoot)
			if err != nil {
				return nil, err
			}
			if cands = append(cands, more...); q == "/" {
				break
			}
		}
	}
	return cands, nil
}

// initSlice is the cgroup path of the slice Slurm's cgroup/v2 plugin puts
// its scope in: system.slice below the parent of PID 1's cgroup
// (/proc/1/cgroup's "0::" line; "/" itself when PID 1 is in the root
// cgroup). "" when /proc/1 is not there or PID 1's cgroup lies outside
// this cgroup namespace.
func (s *cgroupSearch) initSlice() (string, error) {
	cg, err := s.root.ProcCgroups(host.ProcPath(1, "cgroup"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	p, ok := cgroupPath(cg[""])
	if !ok {
		return "", nil
	}
	return path.Join(path.Dir(p), defaultSlice), nil
}

// children lists the child cgroups of cg (a cgroup path in h) whose names
// want says yes to; none when cg does not exist.
func (s *cgroupSearch) children(h *hierarchy, cg string, want func(string) bool) ([]string, error) {
	names, err := s.subdirs(path.Join(h.mount, cg))
	var out []string
	for _, n := range names {
		if want(n) {
			out = append(out, path.Join(cg, n))
		}
	}
	return out, err
}

// subdirs lists the child folders of dir (a node path), never a symlink;
// none when dir does not exist (a daemon's cgroup not in this tree, or
// removed meanwhile). Every folder and entry read counts toward
// maxCgroupDirs.
func (s *cgroupSearch) subdirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(s.root.Path(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.read += 1 + len(ents); s.read > maxCgroupDirs {
		return nil, fmt.Errorf("more than %d cgroups read under %s: %w", maxCgroupDirs, cgroupMount, ErrCgroupTreeTooLarge)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// judge keeps the candidates that are Slurm's and reads their jobs.
func (s *cgroupSearch) judge(h *hierarchy, cands []string) error {
	for _, cg := range cands {
		p := path.Join(h.mount, cg)
		if s.seen[p] {
			continue
		}
		s.seen[p] = true
		if slices.Contains(strings.Split(cg, "/"), userSlice) {
			continue
		}
		owner, dir, err := s.owner(p)
		if err != nil {
			return err
		}
		if !dir || owner != h.owner {
			continue // gone, a symlink, or a delegated subtree's: its user made it
		}
		if err := h.addJobs(s, p); err != nil {
			return err
		}
	}
	return nil
}

// addScopeJobs records a slurmstepd scope (a node path) and its jobs:
// job_<id> and SLUID-named children.
func (s *cgroupSearch) addScopeJobs(scope string) error {
	s.jc.Scopes = append(s.jc.Scopes, scope)
	return s.addJobs(scope, func(name string) (string, bool) {
		if isSLUIDCgroup(name) {
			return name, true
		}
		return JobCgroupID(name)
	})
}

// addV1Jobs records a v1 tree (a node path) and its jobs: uid_<uid>/job_<id>.
func (s *cgroupSearch) addV1Jobs(tree string) error {
	s.jc.V1Roots = append(s.jc.V1Roots, tree)
	users, err := s.subdirs(tree)
	if err != nil {
		return err
	}
	for _, u := range users {
		if !isUIDCgroup(u) {
			continue
		}
		if err := s.addJobs(tree+"/"+u, JobCgroupID); err != nil {
			return err
		}
	}
	return nil
}

// addJobs records the children of dir (a node path) that id names as jobs.
func (s *cgroupSearch) addJobs(dir string, id func(string) (string, bool)) error {
	names, err := s.subdirs(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if j, ok := id(n); ok {
			s.jc.Jobs = append(s.jc.Jobs, dir+"/"+n)
			s.jc.ids[j] = true
		}
	}
	return nil
}

// cgroupPath is a /proc/<pid>/cgroup path made clean ("/system.slice/x"),
// ok false for none or one outside this cgroup namespace ("/../x").
func cgroupPath(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
		return "", false
	}
	return path.Clean(p), true
}

// v1Path is a daemon's cgroup in the v1 hierarchy mounted at
// /sys/fs/cgroup/<dir>: dir names its controllers ("cpu,cpuacct"), or
// "systemd" the named hierarchy name=systemd.
func v1Path(d Daemon, dir string) (string, bool) {
	keys := strings.Split(dir, ",")
	keys = append(keys, "name="+dir)
	for _, k := range keys {
		if p, ok := d.Cgroups[k]; ok {
			return cgroupPath(p)
		}
	}
	return "", false
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
// scope or a v1 slurm tree of Slurm's, FindJobCgroups), so that a job's
// missing cgroup means something.
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

// Has says whether job has a cgroup in Slurm's scopes or v1 trees:
// job_<id>, or, when sluid (the job's SLURM_JOB_SLUID) is not "", a cgroup
// of that name in a slurmstepd scope (Slurm 26.05).
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
// Slurm 26.05), placed as Slurm places it: in some hierarchy's path, the
// first job cgroup (job_<id> or a SLUID directly in a slurmstepd scope;
// job_<id> in a v1 tree's uid_<uid>) is the job's. A path under
// user.slice names no job (a user can name their own cgroups anything), nor
// does a job-like folder below the first (v1 hands a step's cgroup to its
// user).
func ProcInJob(cgroupFile, job, sluid string) bool {
	for _, l := range strings.Split(cgroupFile, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if got, ok := jobOfPath(parts[2]); ok && (got == "job_"+job || sluid != "" && got == sluid) {
			return true
		}
	}
	return false
}

// jobOfPath is the name of the first job cgroup on a cgroup path, placed
// as Slurm places it (ProcInJob); ok false for none.
func jobOfPath(p string) (string, bool) {
	dirs := strings.Split(p, "/")
	if slices.Contains(dirs, userSlice) {
		return "", false
	}
	for i := 1; i < len(dirs); i++ {
		name := dirs[i]
		_, isJob := JobCgroupID(name)
		switch {
		case IsStepdScope(dirs[i-1]) && (isJob || isSLUIDCgroup(name)):
			return name, true
		case i >= 2 && isJob && isUIDCgroup(dirs[i-1]) && IsV1Root(dirs[i-2]):
			return name, true
		}
	}
	return "", false
}
