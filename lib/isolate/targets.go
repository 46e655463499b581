package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/knobval"
	"gpuprep/lib/rundir"
	"gpuprep/lib/slurm"
)

// Options are the node-wide [isolation] settings.
type Options struct {
	// Exclude names units (cgroup folder names, path.Match patterns such
	// as "munge.service" or "docker-*.scope") that are never confined.
	Exclude []string
	// Writer changes the cgroups (lib/isolate/cgwriter's); Apply fails
	// without one. Reading needs none.
	Writer Writer
	// SlurmConf is SLURM_CONF as slurmd gives it to the prolog and epilog
	// ("" when unset) and Node the node's name (SLURMD_NODENAME): where
	// slurmd's pid file is found (slurm.conf's SlurmdPidFile, %n).
	SlurmConf, Node string
	// Units is systemd, where PID 1 is systemd (lib/isolate/sdunits):
	// the cgroups of its units are confined through it (systemd.go).
	// nil: every cgroup is written directly (no systemd; cgroup v1).
	Units Units
	// Log gets what isolation leaves alone and why; nil: nothing.
	Log *slog.Logger
	// RunDir is gpuprep's run directory as the hook opened it for this
	// run (lib/rundir), where the units' marks are kept (systemd.go) and
	// irq_affinity keeps its list; nil: opened for each use.
	RunDir *rundir.Dir
}

// ErrNoCpuset says the node has no cpuset controller gpuprep can use
// (neither cgroup v2 with cpuset available, nor a v1 cpuset hierarchy).
var ErrNoCpuset = errors.New("no cpuset controller")

// Node paths of the cgroup mounts.
const (
	cgroupMount = "/sys/fs/cgroup"
	unifiedFile = "/sys/fs/cgroup/cgroup.controllers" // only where /sys/fs/cgroup is cgroup v2
	v1CpusetDir = "/sys/fs/cgroup/cpuset"
)

// Hierarchy is the cpuset hierarchy of a node: cgroup v2 at /sys/fs/cgroup,
// or v1's /sys/fs/cgroup/cpuset. Cgroup paths below are relative to its
// mount ("system.slice/cron.service").
type Hierarchy struct {
	root host.Root
	// V2 is true for the unified hierarchy.
	V2 bool
	// mount is the node path of the hierarchy's root folder.
	mount string
	// exclude and w are the Options.Exclude and Writer of the last
	// Apply.
	exclude []string
	w       Writer
	// prot is the protected set (cgroups of Slurm's, see protected), read
	// by the first Targets: a Hierarchy lives for one read or apply, and
	// the /proc scan and the cgroup walk need not run twice in it.
	prot map[string]bool
	// units and log are Options.Units and Log of the last Targets or
	// Apply; unitCache what units said of each cgroup, and kept the
	// units left as the admin set them (systemd.go).
	units     Units
	log       *slog.Logger
	unitCache map[string]unitEntry
	kept      map[string]Kept
	// runDir is Options.RunDir of the last Targets or Apply.
	runDir *rundir.Dir
}

// Open finds the cpuset hierarchy under root. cgroup v2 needs "cpuset" in
// /sys/fs/cgroup/cgroup.controllers; v1 needs the cpuset hierarchy
// mounted at /sys/fs/cgroup/cpuset. Otherwise the error wraps ErrNoCpuset.
func Open(root host.Root) (*Hierarchy, error) {
	if s, err := root.ReadString(unifiedFile); err == nil {
		if !slices.Contains(strings.Fields(s), "cpuset") {
			return nil, fmt.Errorf("%s lists no cpuset: %w", unifiedFile, ErrNoCpuset)
		}
		return &Hierarchy{root: root, V2: true, mount: cgroupMount}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if root.Exists(v1CpusetDir + "/cpuset.cpus") {
		return &Hierarchy{root: root, mount: v1CpusetDir}, nil
	}
	return nil, fmt.Errorf("neither %s nor %s/cpuset.cpus: %w", unifiedFile, v1CpusetDir, ErrNoCpuset)
}

// Mount is the node path of the hierarchy's root folder.
func (h *Hierarchy) Mount() string { return h.mount }

// nodePath is the node path of a cgroup.
func (h *Hierarchy) nodePath(cg string) string { return path.Join(h.mount, cg) }

// ErrUnknownLayout says where slurmd and the jobs run cannot be told
// (no slurmd process found, /proc or the cgroup tree unreadable): nothing
// is confined then, since a guess could confine slurmd and every job. It
// wraps knobval.ErrUnsupported: isolation is skipped on such a node, with
// the reason, as any knob the node lacks.
var ErrUnknownLayout = fmt.Errorf("cannot tell where slurmd and the jobs run, so no cgroup is confined: %w", knobval.ErrUnsupported)

// topUnits are the top-level cgroups of systemd's tree Targets may confine
// as wholes (v2); machine.slice (virtual machines and containers an admin
// runs as workloads) and anything else at the top are left alone.
var topUnits = []string{"init.scope", "system.slice", "user.slice"}

// Targets lists the cgroups to confine, sorted. It never lists a cgroup
// that holds slurmd, a slurmstepd (Slurm's slurmstepd.scope) or a job, nor
// an ancestor of one, nor anything inside one. Where slurmd and the jobs
// run is read from the node itself (slurm.FindLayout): slurmd's processes
// (its pid file, SlurmdPidFile, and /proc; only root's count) and their
// /proc/<pid>/cgroup, every slurmstepd's, and Slurm's scopes and job
// cgroups where those daemons place them (slurm.FindJobCgroups). A cgroup
// a user names like Slurm's in their own subtree
// (user.slice/user-<uid>.slice/user@<uid>.service/app.slice/job_5) is the
// user's, confined with user.slice as a whole like the rest of it. When
// the layout cannot be told, the error wraps ErrUnknownLayout.
//
// cgroup v2: the protected cgroups are slurmd's and every slurmstepd's
// cgroup, Slurm's slurmstepd scopes and their job cgroups. Each cgroup
// that is an ancestor of one (system.slice, a nested slurm slice, a container's
// scope slurmd runs in) has its other children confined: the services
// beside slurmd, at every level up to the top, where init.scope,
// system.slice and user.slice are confined as wholes unless they hold
// Slurm. Units named like slurmd's (slurmd.service, slurmd@*.service) or
// Slurm's scope, and opt.Exclude, are never confined.
//
// cgroup v1: systemd does not manage cpuset, so the hierarchy holds
// Slurm's slurm/ (or slurm_<node>/) tree and whatever else an admin made;
// every top-level cgroup but Slurm's, those holding slurmd, a slurmstepd
// or a job, and opt.Exclude is confined, and "." stands for the host
// processes in the hierarchy's root cgroup, which are moved into
// gpuprep.housekeeping (v1root.go).
func (h *Hierarchy) Targets(opt Options) ([]string, error) {
	h.units, h.log, h.runDir = opt.Units, opt.Log, opt.RunDir
	if h.prot == nil {
		lay, err := slurm.FindLayout(h.root, opt.SlurmConf, opt.Node)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrUnknownLayout, err)
		}
		if h.prot, err = h.protected(lay); err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrUnknownLayout, err)
		}
	}
	prot := h.prot
	if !h.V2 {
		return h.targetsV1(opt, prot)
	}
	if prot[""] {
		return nil, nil // slurmd in the root cgroup: nothing around it is a service of its own
	}
	// anc: every strict ancestor of a protected cgroup.
	anc := map[string]bool{}
	for p := range prot {
		for q := p; q != ""; {
			q = parent(q)
			anc[q] = true
		}
	}
	var out []string
	for _, a := range slices.Sorted(maps.Keys(anc)) {
		if h.inside(a, prot) {
			continue // a protected cgroup's children are Slurm's
		}
		units, err := h.subdirs(a)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a process's cgroup path not in this tree (a fixture, or it just went)
		}
		if err != nil {
			return nil, err
		}
		for _, u := range units {
			cg := path.Join(a, u)
			switch {
			case prot[cg], anc[cg], a == "" && !slices.Contains(topUnits, u),
				slurm.IsStepdScope(u), isSlurmd(u), excluded(u, opt.Exclude):
				continue
			}
			out = append(out, cg)
		}
	}
	slices.Sort(out)
	return h.dropOutranked(out)
}

// targetsV1 is Targets on cgroup v1: "." and the top-level cgroups that
// hold nothing of Slurm's.
func (h *Hierarchy) targetsV1(opt Options, prot map[string]bool) ([]string, error) {
	held := map[string]bool{}
	for p := range prot {
		top, _, _ := strings.Cut(p, "/")
		held[top] = true
	}
	dirs, err := h.subdirs("")
	if err != nil {
		return nil, err
	}
	out := []string{rootTasks}
	for _, d := range dirs {
		if held[d] || slurm.IsV1Root(d) || d == hkCgroup || excluded(d, opt.Exclude) {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// protected lists, as paths below the hierarchy's mount ("" for its root),
// the cgroups of slurmd and every slurmstepd (/proc/<pid>/cgroup: the v2
// line, or v1's cpuset line) and Slurm's scopes, v1 trees and job cgroups
// in this hierarchy. A daemon without a path in this hierarchy, or with one
// outside this cgroup namespace ("/../..."), is an error.
func (h *Hierarchy) protected(lay *slurm.Layout) (map[string]bool, error) {
	prot := map[string]bool{}
	key := ""
	if !h.V2 {
		key = "cpuset"
	}
	for _, d := range slices.Concat(lay.Slurmd, lay.Stepd) {
		p, ok := d.Cgroups[key]
		if !ok {
			return nil, fmt.Errorf("process %d (%s): no %s line in /proc/%d/cgroup", d.PID, d.Exe, hierarchyName(h.V2), d.PID)
		}
		if slices.Contains(strings.Split(p, "/"), "..") {
			return nil, fmt.Errorf("process %d (%s): cgroup %s lies outside this cgroup namespace", d.PID, d.Exe, p)
		}
		prot[strings.TrimPrefix(path.Clean(p), "/")] = true
	}
	for _, p := range slices.Concat(lay.Cgroups.Scopes, lay.Cgroups.V1Roots, lay.Cgroups.Jobs) {
		if rel, ok := strings.CutPrefix(p, h.mount+"/"); ok {
			prot[rel] = true
		}
	}
	return prot, nil
}

// hierarchyName names the /proc/<pid>/cgroup line of a hierarchy.
func hierarchyName(v2 bool) string {
	if v2 {
		return "cgroup v2 (0::)"
	}
	return "cpuset"
}

// parent is a cgroup's parent ("" for a top-level one).
func parent(cg string) string {
	if i := strings.LastIndexByte(cg, '/'); i >= 0 {
		return cg[:i]
	}
	return ""
}

// inside says whether cg is a protected cgroup or lies in one.
func (h *Hierarchy) inside(cg string, prot map[string]bool) bool {
	for q := cg; ; q = parent(q) {
		if prot[q] {
			return true
		}
		if q == "" {
			return false
		}
	}
}

// isSlurmd says whether a unit is slurmd's own (which Slurm confines
// itself with CpuSpecList, and which must reach every CPU otherwise).
func isSlurmd(unit string) bool {
	return unit == "slurmd.service" || strings.HasPrefix(unit, "slurmd@") && strings.HasSuffix(unit, ".service")
}

// excluded says whether a unit matches one of the patterns.
func excluded(unit string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, unit); ok || p == unit {
			return true
		}
	}
	return false
}

// subdirs lists the child cgroups (folders) of cg, sorted.
func (h *Hierarchy) subdirs(cg string) ([]string, error) {
	ents, err := os.ReadDir(h.root.Path(h.nodePath(cg)))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
