package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/crashpoint"
)

// cpusFile is a cgroup's CPU limit, in both versions.
const cpusFile = "cpuset.cpus"

// ReadCPUs reads <cgroup>/cpuset.cpus: the CPUs the cgroup is limited to,
// in canonical form. "" (v2 only) means no limit of its own: the file is
// empty or absent (cpuset not enabled for the cgroup), or holds exactly the
// CPUs the parent has
// (<parent>/cpuset.cpus.effective), which is what writing "" leaves on a
// cgroup with processes (see WriteCPUs). A cgroup (or its file) that does
// not exist gives an error wrapping fs.ErrNotExist; content that is not a
// CPU list an error naming the file.
//
// A systemd unit's cpuset.cpus that holds its AllowedCPUs= property
// (systemd.go) reads as it is, so that putting it back sets that property
// exactly; one that holds something else (written behind systemd's back)
// reads as the kernel has it, so that the difference shows as drift.
//
// Read here, not through containerd/cgroups: its v2 Manager has no getter
// for cpuset.cpus (Stat reports usage, not limits) and its v1 cpuset
// controller reads the files only to copy them to a child.
func (h *Hierarchy) ReadCPUs(cg string) (string, error) {
	if cg == rootTasks && !h.V2 {
		return h.readRootTasks()
	}
	u, isUnit, err := h.unitOf(cg)
	if err != nil {
		return "", err
	}
	set, err := h.readList(path.Join(h.nodePath(cg), cpusFile))
	if isUnit && err == nil && !u.AllowedCPUs.IsEmpty() && set.Equal(u.AllowedCPUs) {
		// A unit's own AllowedCPUs=, as systemd holds it, even where it
		// is every CPU of the parent (which an explicit setting may be).
		return set.String(), nil
	}
	if h.V2 && errors.Is(err, fs.ErrNotExist) && h.root.Exists(h.nodePath(cg)) {
		// No cpuset controller enabled for it (its parent's
		// cgroup.subtree_control lacks cpuset): no limit of its own.
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cgroup %s: %w", cg, err)
	}
	if h.V2 && !set.IsEmpty() && cg != "" {
		if parent, err := h.parentCPUs(cg); err == nil && set.Equal(parent) {
			return "", nil
		}
	}
	return set.String(), nil
}

// parentCPUs reads <parent>/cpuset.cpus.effective (v2): the CPUs a cgroup
// without a limit of its own has.
func (h *Hierarchy) parentCPUs(cg string) (cpuset.Set, error) {
	return h.readList(path.Join(path.Dir(h.nodePath(cg)), "cpuset.cpus.effective"))
}

// readList reads a CPU list file; content that is not one is an error
// naming the file.
func (h *Hierarchy) readList(p string) (cpuset.Set, error) {
	s, err := h.root.ReadString(p)
	if err != nil {
		return cpuset.Set{}, err
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("%s: unexpected content (want a CPU list such as 0-3,8): %w", p, err)
	}
	return set, nil
}

// WriteCPUs limits cg to cpus (canonical form; "" lets a v2 cgroup have
// its parent's CPUs again, and gives a v1 cgroup the root's CPUs, v1
// having no "inherit"). A cgroup that does not exist is not created: the
// error wraps fs.ErrNotExist.
func (h *Hierarchy) WriteCPUs(cg, cpus string) error {
	if cg == rootTasks && !h.V2 {
		return h.writeRootTasks(cpus, h.exclude)
	}
	dir := h.nodePath(cg)
	if cg == "" || cg == "." || strings.Contains(cg, "..") || !h.root.Exists(dir) {
		return fmt.Errorf("cgroup %s: %w", cg, fs.ErrNotExist)
	}
	if h.V2 {
		return h.writeV2(cg, cpus)
	}
	return h.writeV1(cg, cpus)
}

// writeV2 limits a v2 cgroup: a systemd unit's through systemd
// (writeUnit), any other's cpuset.cpus through the Writer
// (containerd/cgroups, which enables the cpuset controller on the way);
// "" (no limit of its own) is clearV2's.
func (h *Hierarchy) writeV2(cg, cpus string) error {
	if u, ok, err := h.unitOf(cg); err != nil {
		return err
	} else if ok {
		return h.writeUnit(cg, u, cpus)
	}
	if cpus == "" {
		return h.clearV2(cg)
	}
	w, err := h.writer()
	if err != nil {
		return err
	}
	crashpoint.Hit("cgroup-set", cg)
	return w.SetV2(h.root.Path(h.mount), cg, cpus)
}

// clearV2 takes a v2 cgroup's own limit away. The kernel refuses an empty
// cpuset.cpus on a cgroup with processes once it had a non-empty one
// (ENOSPC: kernel/cgroup/cpuset.c validate_change, seen on a 6.x kernel),
// so there it writes the parent's effective CPUs instead: the CPUs the
// cgroup would inherit, which ReadCPUs reads as "" again. It differs from
// a true empty only if the parent's CPUs change later (hotplug, or the
// parent narrowed), until the unit restarts.
//
// An empty value is written directly, as a newline (the kernel takes it as
// the empty list), since Resources with an empty Cpus write nothing
// (containerd treats "" as "unset").
func (h *Hierarchy) clearV2(cg string) error {
	p := path.Join(h.nodePath(cg), cpusFile)
	_, err := h.root.WriteFile(p, "\n")
	if err == nil || !errors.Is(err, unix.ENOSPC) {
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", cg, err)
		}
		return nil
	}
	parent, perr := h.parentCPUs(cg)
	if perr != nil {
		return fmt.Errorf("cgroup %s: %w (and the parent's CPUs: %v)", cg, err, perr)
	}
	if _, err := h.root.WriteFile(p, parent.String()); err != nil {
		return fmt.Errorf("cgroup %s: %w", cg, err)
	}
	return nil
}

// writeV1 writes a v1 cgroup's cpuset.cpus through the Writer. Its
// Update creates the cgroup, which is why WriteCPUs checks first that the
// cgroup exists: a unit that vanished must not come back as an empty
// cgroup. v1 has no "no limit": "" writes the root's CPUs.
func (h *Hierarchy) writeV1(cg, cpus string) error {
	if cpus == "" {
		all, err := h.ReadCPUs("")
		if err != nil {
			return err
		}
		cpus = all
	}
	w, err := h.writer()
	if err != nil {
		return err
	}
	crashpoint.Hit("cgroup-set", cg)
	return w.SetV1(h.root.Path(path.Dir(h.mount)), cg, cpus, "")
}

// Writer changes cgroups: lib/isolate/cgwriter's, over
// containerd/cgroups/v3. It is passed in (Options.Writer) so that what
// only reads (the knob's Read, gpuprep-gres, srunwrap's configuration) does
// not link containerd/cgroups.
type Writer interface {
	// SetV2 writes <mount>/<cg>/cpuset.cpus (cpus not empty), enabling
	// the cpuset controller on the cgroup's ancestors where it is not.
	SetV2(mount, cg, cpus string) error
	// SetV1 creates or updates the v1 cpuset cgroup cg below
	// <root>/cpuset with cpus and, when not empty, mems.
	SetV1(root, cg, cpus, mems string) error
}

// ErrNoWriter is Apply's error when Options.Writer is nil.
var ErrNoWriter = errors.New("isolate: no cgroup writer (Options.Writer)")

func (h *Hierarchy) writer() (Writer, error) {
	if h.w == nil {
		return nil, ErrNoWriter
	}
	return h.w, nil
}

// vanished says whether err is about a cgroup that does not exist (any
// more).
func vanished(err error) bool { return errors.Is(err, fs.ErrNotExist) }
