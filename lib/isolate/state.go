package isolate

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/knobval"
)

// State maps each confined cgroup (path below the hierarchy's mount) to its
// cpuset.cpus in canonical form ("" for none of its own).
type State map[string]string

// The canonical form of a State, the housekeeping_cpus knob's Value:
//
//	0-3                                  every cgroup holds 0-3
//	(empty)                              every cgroup holds none of its own
//	init.scope=;system.slice/cron.service=0-3;user.slice=
//	                                     otherwise: each cgroup, sorted by path
//
// So a unit that vanished during a job leaves the Value as it was, and a
// unit started during the job outside the housekeeping CPUs makes it
// per-cgroup: the epilog sees drift. A Value is per-cgroup exactly when it
// contains '='. No cgroup at all reads as "" (nothing is confined).
//
// This form is what plans compare and drift is checked against. What puts
// the cgroups back (the baseline, a change's undo) is per-cgroup always,
// naming only the cgroups gpuprep wrote: see baseline.go.

// ValueForm is how a State is written as one Value (knobval.Form): keys
// are cgroup paths, one part each, summed up where every cgroup holds the
// same. lib/plan keeps the knob's baseline and undo part by part through
// it (knobval's Rebase, Narrow, Merge).
var ValueForm = knobval.Form{What: "housekeeping value", Summed: true, Check: checkPart}

// checkPart checks one cgroup's part of a Value (cg "" for a uniform
// Value): a relative path without "..", and a CPU list, which it returns
// in canonical form.
func checkPart(cg, list string) (string, error) {
	if cg != "" && (strings.Contains(cg, "..") || strings.HasPrefix(cg, "/")) {
		return "", fmt.Errorf("%q is not <cgroup>=<cpus>", cg+"="+list)
	}
	set, err := cpuset.Parse(list)
	if err != nil && cg != "" {
		return "", fmt.Errorf("%s: %w", cg, err)
	}
	if err != nil {
		return "", err
	}
	return set.String(), nil
}

// Format is s in canonical form.
func (s State) Format() string { return string(ValueForm.Format(knobval.Parts(s))) }

// FormatPerCgroup is s with every cgroup named, even where all hold the
// same ("init.scope=;user.slice="); "" when s is empty.
func (s State) FormatPerCgroup() string { return string(ValueForm.FormatEach(knobval.Parts(s))) }

// ParseValue reads a Value: uniform (a CPU list, or "") or per-cgroup.
// per is nil for a uniform one, else it holds the cgroups.
func ParseValue(v string) (cpus string, per State, err error) {
	all, each, err := ValueForm.Parse(knobval.Value(v))
	if each == nil {
		return all, nil, err
	}
	return "", State(each), err
}

// Read reads what every target cgroup holds now. A target that vanishes
// between listing and reading is left out.
func (h *Hierarchy) Read(opt Options) (State, error) {
	targets, err := h.Targets(opt)
	if err != nil {
		return nil, err
	}
	st := State{}
	for _, cg := range targets {
		cpus, err := h.ReadCPUs(cg)
		if vanished(err) && !h.root.Exists(h.nodePath(cg)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st[cg] = cpus
	}
	return st, nil
}

// Apply puts a Value in force. A uniform one (what a prolog applies) is
// written to every target cgroup present now; a per-cgroup one (what puts
// them back, see Rebase) to each of its cgroups that still exists (a unit
// that vanished is no error; one not listed is left alone). A cgroup already right is not written; each write is read
// back, and a cgroup that kept another value is an error naming it. It
// returns the cgroups written.
//
// With systemd (Options.Units), its units are set through it (see
// systemd.go), and putting a per-cgroup Value back also removes the
// runtime drop-ins gpuprep's own calls created for its units.
func (h *Hierarchy) Apply(opt Options, v string, log *slog.Logger) ([]string, error) {
	cpus, per, err := ParseValue(v)
	if err != nil {
		return nil, err
	}
	h.exclude, h.w, h.units, h.log, h.runDir = opt.Exclude, opt.Writer, opt.Units, opt.Log, opt.RunDir
	putBack := per != nil
	if !putBack {
		targets, err := h.Targets(opt)
		if err != nil {
			return nil, err
		}
		per = State{}
		for _, cg := range targets {
			per[cg] = cpus
		}
	}
	var done []string
	for _, cg := range slices.Sorted(maps.Keys(per)) {
		want := per[cg]
		if cur, err := h.ReadCPUs(cg); err == nil && cur == want {
			continue // already right: no write (nor cpuset to enable)
		}
		if err := h.WriteCPUs(cg, want); err != nil {
			if vanished(err) && !h.root.Exists(h.nodePath(cg)) {
				if log != nil {
					log.Debug("isolate: cgroup vanished, skipped", "cgroup", cg)
				}
				continue
			}
			return done, err
		}
		if !h.V2 && want == "" {
			want, _ = h.ReadCPUs("")
		}
		got, err := h.settled(cg, want)
		if err != nil {
			return done, err
		}
		if got != want {
			return done, fmt.Errorf("cgroup %s: wrote %s %q, read back %q", cg, cpusFile, want, got)
		}
		if err := h.checkTasks(cg); err != nil {
			return done, err
		}
		done = append(done, cg)
	}
	if putBack {
		h.releaseDropIns(slices.Sorted(maps.Keys(per)))
	}
	return done, nil
}
