package isolate

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

// Options are the node-wide [isolation] settings.
type Options struct {
	// Exclude names units (cgroup folder names, path.Match patterns such
	// as "munge.service" or "docker-*.scope") that are never confined.
	Exclude []string
	// IRQs also moves interrupts that are not a GPU's or a NIC's to the
	// housekeeping CPUs. Not implemented yet: Read and Apply ignore it.
	IRQs bool
	// Writer changes the cgroups (lib/isolate/cgwriter's); Apply fails
	// without one. Reading needs none.
	Writer Writer
}

// ErrNoCpuset says the node has no cpuset controller gpuprep can use
// (neither cgroup v2 with cpuset available, nor a v1 cpuset hierarchy).
var ErrNoCpuset = errors.New("no cpuset controller")

// Node paths of the cgroup mounts.
const (
	cgroupMount  = "/sys/fs/cgroup"
	unifiedFile  = "/sys/fs/cgroup/cgroup.controllers" // only where /sys/fs/cgroup is cgroup v2
	v1CpusetDir  = "/sys/fs/cgroup/cpuset"
	stepdSuffix  = "slurmstepd.scope"
	defaultSlice = "system.slice"
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

// Targets lists the cgroups to confine, sorted. It never lists Slurm's
// cgroups, their ancestors or anything below them.
//
// cgroup v2: Slurm's cgroup/v2 plugin puts every job under
// <slice>/slurmstepd.scope (normally system.slice), so a limit on the
// slice would confine the jobs too. Instead each sibling of the scope in
// its slice is confined, except slurmd (slurmd.service, slurmd@*.service)
// and opt.Exclude, and user.slice and init.scope as wholes. Without a
// slurmstepd.scope (no job has run since boot) the slice is system.slice.
//
// cgroup v1: systemd does not manage cpuset, so the hierarchy holds
// Slurm's slurm/ (or slurm_<node>/) tree and whatever else an admin made;
// every top-level cgroup but Slurm's and opt.Exclude is confined, and "."
// stands for the host processes in the hierarchy's root cgroup, which are
// moved into gpuprep.housekeeping (v1root.go).
func (h *Hierarchy) Targets(opt Options) ([]string, error) {
	if !h.V2 {
		dirs, err := h.subdirs("")
		if err != nil {
			return nil, err
		}
		out := []string{rootTasks}
		for _, d := range dirs {
			if d == "slurm" || strings.HasPrefix(d, "slurm_") || d == hkCgroup || excluded(d, opt.Exclude) {
				continue
			}
			out = append(out, d)
		}
		return out, nil
	}
	scope, err := h.stepdScope()
	if err != nil {
		return nil, err
	}
	slice := defaultSlice
	if scope != "" {
		slice = path.Dir(scope)
		if slice == "." {
			slice = ""
		}
	}
	var out []string
	units, err := h.subdirs(slice)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, u := range units {
		if strings.HasSuffix(u, stepdSuffix) || isSlurmd(u) || excluded(u, opt.Exclude) {
			continue
		}
		out = append(out, path.Join(slice, u))
	}
	for _, top := range []string{"user.slice", "init.scope"} {
		if !slices.Contains(out, top) && !excluded(top, opt.Exclude) && h.root.Exists(h.nodePath(top)) {
			out = append(out, top)
		}
	}
	slices.Sort(out)
	// Belt and braces: nothing that holds or lies inside a Slurm scope.
	out = slices.DeleteFunc(out, func(cg string) bool {
		return scope != "" && (cg == scope || strings.HasPrefix(scope, cg+"/") || strings.HasPrefix(cg, scope+"/"))
	})
	return out, nil
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

// stepdScope finds Slurm's slurmstepd scope (v2): "system.slice/slurmstepd.scope",
// or with several slurmd per host "<slice>/<node>_slurmstepd.scope"; ""
// when there is none. Where several match, the first in sorted order
// counts; every one is still left alone, since none is a sibling of the
// others' slice units (they end in slurmstepd.scope).
func (h *Hierarchy) stepdScope() (string, error) {
	for _, pat := range []string{"*" + stepdSuffix, "*/*" + stepdSuffix, "*/*/*" + stepdSuffix} {
		m, err := h.root.Glob(path.Join(h.mount, pat))
		if err != nil {
			return "", fmt.Errorf("cgroup: %w", err)
		}
		if len(m) > 0 {
			return strings.TrimPrefix(m[0], h.mount+"/"), nil
		}
	}
	return "", nil
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
