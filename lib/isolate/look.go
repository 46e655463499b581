package isolate

import (
	"errors"
	"slices"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// View is a read-only look at the isolation the hooks would do on a node
// (--check-config): which hierarchy, whether systemd's units are confined
// through systemd, and the units kept as the admin set them.
type View struct {
	// V2 is true on the unified hierarchy (cgroup v2).
	V2 bool
	// Systemd is true where the cgroups of systemd's units are confined
	// through systemd (runtime AllowedCPUs=, systemd.go): cgroup v2 with
	// Options.Units set. False: every cgroup's cpuset.cpus is written
	// directly (cgroupfs.go).
	Systemd bool
	// Kept lists the units Targets leaves as the admin set them (Kept),
	// sorted by unit; always empty where Systemd is false.
	Kept []Kept
}

// Look is what the hooks' Targets decides on the node under root, without
// changing anything: it reads the cpuset hierarchy (Open:
// /sys/fs/cgroup/cgroup.controllers or /sys/fs/cgroup/cpuset), and where
// Systemd, what Targets reads: slurmd's pid file and /proc (where slurmd
// and the jobs run), the cgroup tree, each candidate unit's ControlGroup,
// AllowedCPUs and DropInPaths through opt.Units, and the drop-in files
// those name (Outranking). opt.Writer and opt.RunDir are dropped and
// opt.Units can only read: no unit property is set, no daemon-reload
// asked, no file or cgroup written. The error of Open or Targets comes
// with the View known so far (nil when Open failed).
func Look(root host.Root, opt Options) (*View, error) {
	h, err := Open(root)
	if err != nil {
		return nil, err
	}
	v := &View{V2: h.V2, Systemd: h.V2 && opt.Units != nil}
	if !v.Systemd {
		return v, nil // no unit is kept where systemd is not asked
	}
	opt.Writer, opt.RunDir, opt.Units = nil, nil, readOnlyUnits{opt.Units}
	if _, err := h.Targets(opt); err != nil {
		return v, err
	}
	for _, k := range h.Kept() {
		v.Kept = append(v.Kept, k)
	}
	slices.SortFunc(v.Kept, func(a, b Kept) int { return strings.Compare(a.Unit, b.Unit) })
	return v, nil
}

// errReadOnly is what readOnlyUnits answers a change with.
var errReadOnly = errors.New("isolate: a read-only look changes no unit")

// readOnlyUnits is Units that reads and refuses every change.
type readOnlyUnits struct{ Units }

func (readOnlyUnits) SetAllowedCPUs(string, cpuset.Set) error { return errReadOnly }
func (readOnlyUnits) Reload() error                           { return errReadOnly }
