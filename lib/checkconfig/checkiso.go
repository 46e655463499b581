package checkconfig

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/isolate/sdunits"
)

// checkIsolation prints how the hooks would confine the node's services
// (housekeeping_cpus) here, read-only: through systemd over D-Bus, as the
// hooks decide (sdunits.New: systemd is PID 1, /run/systemd/system under
// root), or by writing cpuset.cpus directly, and why; where systemd, it
// reads systemd's SystemState (is D-Bus reachable) and the units the hooks
// would keep as the admin set them (reportIsolation). getenv gives
// SLURM_CONF, where slurmd's pid file is found, as the hooks' own.
func checkIsolation(root host.Root, cfg *config.Config, getenv func(string) string, node string, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), cli.Deadline(cfg))
	defer cancel()
	_, why := sdunits.Why(root)
	opt := isolate.Options{Exclude: cfg.Isolation.Exclude, SlurmConf: getenv("SLURM_CONF"), Node: node}
	if m := sdunits.New(ctx, root); m != nil {
		defer m.Close()
		opt.Units = m
		if err := m.Ping(); err != nil {
			// The hooks' every call to systemd would fail as this one.
			opt.Units = unreachable{err}
			why = fmt.Sprintf("%s, but D-Bus not reachable: %v", why, err)
		}
	}
	reportIsolation(w, root, opt, why)
}

// reportIsolation prints what isolate.Look finds on the node under root
// with opt (opt.Units nil: no systemd) and why that mode: the hierarchy
// and how cgroups would be changed, and the units the hooks would keep as
// the admin set them (unit, drop-in file, CPUs).
func reportIsolation(w io.Writer, root host.Root, opt isolate.Options, why string) {
	v, err := isolate.Look(root, opt)
	if v == nil {
		fmt.Fprintf(w, "isolation: housekeeping_cpus confines nothing here: %v\n", err)
		return
	}
	switch {
	case !v.V2:
		fmt.Fprintln(w, "isolation: cgroup v1: housekeeping_cpus writes each service's cpuset.cpus directly (cgroupfs; systemd does not manage cpuset on cgroup v1)")
	case !v.Systemd:
		fmt.Fprintf(w, "isolation: cgroup v2: housekeeping_cpus writes each service's cpuset.cpus directly (cgroupfs): %s\n", why)
	default:
		fmt.Fprintf(w, "isolation: cgroup v2: housekeeping_cpus sets the runtime AllowedCPUs= of systemd's units over D-Bus (a cgroup of no unit: its cpuset.cpus directly): %s\n", why)
	}
	if errors.Is(err, isolate.ErrSystemd) {
		fmt.Fprintf(w, "isolation: the hooks confine no cgroup here: %v\n", err)
		return
	}
	if err != nil {
		fmt.Fprintf(w, "isolation: units kept as the admin set them not checked: %v\n", err)
		return
	}
	if v.Systemd && len(v.Kept) == 0 {
		fmt.Fprintln(w, "isolation: keeps no unit as the admin set it (no admin's AllowedCPUs= outranks a runtime one)")
	}
	for _, k := range v.Kept {
		cpus := k.CPUs
		if cpus == "" {
			cpus = " (none of its own)"
		}
		fmt.Fprintf(w, "isolation: keeps %s as the admin set it: AllowedCPUs=%s in %s\n", k.Unit, cpus, k.File)
	}
}

// unreachable is systemd that D-Bus does not reach: every call fails with
// err, as the hooks' would.
type unreachable struct{ err error }

func (u unreachable) Unit(string, string) (isolate.UnitInfo, bool, error) {
	return isolate.UnitInfo{}, false, u.err
}
func (u unreachable) SetAllowedCPUs(string, cpuset.Set) error { return u.err }
func (u unreachable) Reload() error                           { return u.err }
