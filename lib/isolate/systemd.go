package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/crashpoint"
	"gpuprep/lib/knobval"
	"gpuprep/lib/rundir"
)

// Where PID 1 is systemd (Options.Units set), a target cgroup that is a
// systemd unit's is confined through systemd: runtime AllowedCPUs=, which
// survives daemon-reload, daemon-reexec and restarts of the unit. What
// systemd stores for it is a runtime drop-in
// (/run/systemd/system.control/<unit>.d/50-AllowedCPUs.conf; transient
// units and init.scope: /run/systemd/transient/...). Putting a unit back
// sets its AllowedCPUs back and removes the drop-ins gpuprep's calls
// created, never one the admin made (set-property --runtime before the
// job): before gpuprep first sets a unit that has no runtime drop-in, it
// leaves a mark, /run/gpuprep/units/<unit>. /run is a tmpfs, like
// systemd's runtime drop-ins: a reboot forgets both.

// unitMarkDir holds the marks of the units whose runtime drop-in gpuprep
// created: unitMarkSub in the run directory (lib/rundir).
const (
	unitMarkDir = "/run/gpuprep/" + unitMarkSub
	unitMarkSub = "units"
)

// settle bounds the wait for systemd to write a unit's cpuset.cpus after
// SetUnitProperties has answered (systemd realizes cgroup settings from a
// queue of its event loop, after the reply).
const settle = 5 * time.Second

// ErrSystemd says systemd could not be asked about a unit: isolation is
// skipped as unsupported (never a cpuset.cpus write behind systemd's back,
// which its next daemon-reload would undo without a word).
var ErrSystemd = fmt.Errorf("systemd owns the cgroups but did not answer, so no cgroup is confined: %w", knobval.ErrUnsupported)

// unitEntry caches what Units said of a cgroup's unit.
type unitEntry struct {
	info UnitInfo
	ok   bool
}

// unitOf is the systemd unit whose cgroup cg is, when isolation goes
// through systemd here (v2, Options.Units set); ok false otherwise.
func (h *Hierarchy) unitOf(cg string) (UnitInfo, bool, error) {
	name := unitName(cg)
	if h.units == nil || !h.V2 || name == "" {
		return UnitInfo{}, false, nil
	}
	if e, hit := h.unitCache[cg]; hit {
		return e.info, e.ok, nil
	}
	u, ok, err := h.units.Unit(name, "/"+cg)
	if err != nil {
		return UnitInfo{}, false, fmt.Errorf("%w: unit %s: %v", ErrSystemd, name, err)
	}
	if h.unitCache == nil {
		h.unitCache = map[string]unitEntry{}
	}
	h.unitCache[cg] = unitEntry{u, ok}
	return u, ok, nil
}

// dropOutranked leaves out of targets the units whose AllowedCPUs= an
// admin set in a way that outranks a runtime one (Outranking): gpuprep
// keeps them as they are and says so, once per hierarchy, in the log.
func (h *Hierarchy) dropOutranked(targets []string) ([]string, error) {
	if h.units == nil || !h.V2 {
		return targets, nil
	}
	out := targets[:0:0]
	for _, cg := range targets {
		u, ok, err := h.unitOf(cg)
		if err != nil {
			return nil, err
		}
		if ok {
			if file, cpus := Outranking(u.DropIns, h.root.ReadString); file != "" {
				h.keep(cg, u.Name, file, cpus)
				continue
			}
		}
		out = append(out, cg)
	}
	return out, nil
}

// Kept is a unit isolation leaves alone: the admin's own AllowedCPUs= in
// File (CPUs, "" for none of its own) would replace gpuprep's runtime one
// at the next daemon-reload.
type Kept struct{ Unit, File, CPUs string }

// Kept lists the units Targets left alone so far, by cgroup.
func (h *Hierarchy) Kept() map[string]Kept { return h.kept }

func (h *Hierarchy) keep(cg, unit, file, cpus string) {
	if h.kept == nil {
		h.kept = map[string]Kept{}
	}
	if _, seen := h.kept[cg]; !seen && h.log != nil {
		h.log.Warn("isolation leaves a unit as the admin set it: its AllowedCPUs= would replace a runtime one at the next daemon-reload",
			"unit", unit, "file", file, "AllowedCPUs", cpus)
	}
	h.kept[cg] = Kept{Unit: unit, File: file, CPUs: cpus}
}

// writeUnit sets a unit's AllowedCPUs= (cpus in canonical form). "" (none
// of its own) is set in two steps where the unit has CPUs of its own now:
// first its parent's effective CPUs, then none. A kernel refuses to take a
// populated cgroup from a list to an empty cpuset.cpus (ENOSPC, which
// systemd only logs), so one step would leave the old list in the kernel.
func (h *Hierarchy) writeUnit(cg string, u UnitInfo, cpus string) error {
	if err := h.markIfNew(u.Name); err != nil {
		return err
	}
	delete(h.unitCache, cg)
	if cpus != "" {
		set, err := cpuset.Parse(cpus)
		if err != nil {
			return fmt.Errorf("unit %s: %w", u.Name, err)
		}
		return h.setUnit(u.Name, set)
	}
	own, err := h.readList(path.Join(h.nodePath(cg), cpusFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cgroup %s: %w", cg, err)
	}
	if !u.AllowedCPUs.IsEmpty() || !own.IsEmpty() {
		parent, err := h.parentCPUs(cg)
		if err != nil {
			return fmt.Errorf("cgroup %s: the parent's CPUs: %w", cg, err)
		}
		if err := h.setUnit(u.Name, parent); err != nil {
			return err
		}
	}
	return h.setUnit(u.Name, cpuset.New())
}

func (h *Hierarchy) setUnit(name string, cpus cpuset.Set) error {
	crashpoint.Hit("unit-set", name)
	if err := h.units.SetAllowedCPUs(name, cpus); err != nil {
		return fmt.Errorf("unit %s: set AllowedCPUs=%s (runtime): %w", name, cpus, err)
	}
	return nil
}

// settled reads cg's cpuset.cpus until it holds want, for at most settle,
// when systemd set it (systemd writes it after answering); a cgroup written
// directly is read once.
func (h *Hierarchy) settled(cg, want string) (string, error) {
	stop := time.Now().Add(settle)
	_, viaSystemd, _ := h.unitOf(cg) // cached; a direct write is in force at once
	for {
		got, err := h.ReadCPUs(cg)
		if err != nil || got == want || !viaSystemd || time.Now().After(stop) {
			return got, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// releaseDropIns removes the runtime drop-ins gpuprep created for the units
// of cgs (those with a mark), whether the unit still runs or not, and then
// has systemd read its configuration again, so that its units are as the
// admin configured them and `systemctl status` shows no stale drop-in. A
// unit's AllowedCPUs was set back before (or the unit is gone). What
// cannot be removed is logged, and the rest goes on.
func (h *Hierarchy) releaseDropIns(cgs []string) {
	if h.units == nil || !h.V2 {
		return
	}
	removed := false
	for _, cg := range cgs {
		name := unitName(cg)
		if name == "" || !h.marked(name) {
			continue
		}
		ok := true
		for _, p := range runtimeDropIns(name) {
			crashpoint.Hit("unit-dropin-remove", h.root.Path(p))
			err := os.Remove(h.root.Path(p))
			switch {
			case err == nil:
				removed = true
				os.Remove(h.root.Path(path.Dir(p))) // its folder, when empty
			case !errors.Is(err, fs.ErrNotExist):
				ok = false
				h.warn("runtime drop-in not removed", "unit", name, "err", err)
			}
		}
		if ok {
			if err := h.unmark(name); err != nil {
				h.warn("mark not removed", "unit", name, "err", err)
			}
		}
	}
	if removed {
		if err := h.units.Reload(); err != nil {
			h.warn("systemd daemon-reload after removing gpuprep's drop-ins failed", "err", err)
		}
	}
}

func (h *Hierarchy) warn(msg string, args ...any) {
	if h.log != nil {
		h.log.Warn("isolate: "+msg, args...)
	}
}

// markPath is a unit's mark (host path), for messages.
func (h *Hierarchy) markPath(unit string) string { return h.root.Path(path.Join(unitMarkDir, unit)) }

// markName is a unit's mark in the run directory.
func markName(unit string) string { return unitMarkSub + "/" + unit }

// marked says whether gpuprep created the unit's runtime drop-in: its
// mark is a regular file of the run directory's.
func (h *Hierarchy) marked(unit string) bool {
	ok := false
	rundir.Use(h.runDir, h.root, false, func(rd *rundir.Dir) error {
		st, err := rd.Lstat(markName(unit))
		ok = err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
		return nil
	})
	return ok
}

// markIfNew marks the unit before gpuprep first sets it, when it has no
// runtime drop-in of its own (so, once set, the one systemd stores is
// gpuprep's). A unit with one and no mark has the admin's. The marks'
// folder is root's 0700, made through the run directory (lib/rundir),
// never through a symlink.
func (h *Hierarchy) markIfNew(unit string) error {
	if h.marked(unit) {
		return nil
	}
	for _, p := range runtimeDropIns(unit) {
		if h.root.Exists(p) {
			return nil
		}
	}
	err := rundir.Use(h.runDir, h.root, true, func(rd *rundir.Dir) error {
		dir, err := rd.MkdirAt(unitMarkSub, 0o700)
		if err != nil {
			return err
		}
		dir.Close()
		crashpoint.Hit("unit-mark", h.markPath(unit))
		return rd.WriteAtomic(markName(unit), nil, 0o600)
	})
	if err != nil {
		return fmt.Errorf("unit %s: mark: %w", unit, err)
	}
	return nil
}

// unmark removes the unit's mark.
func (h *Hierarchy) unmark(unit string) error {
	crashpoint.Hit("unit-unmark", h.markPath(unit))
	return rundir.Use(h.runDir, h.root, true, func(rd *rundir.Dir) error { return rd.Remove(markName(unit)) })
}
