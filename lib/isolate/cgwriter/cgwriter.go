// Package cgwriter writes cpuset limits through github.com/containerd/cgroups/v3,
// for lib/isolate. It is a package of its own so that only the programs
// that change cgroups (the prolog and epilog, through lib/hook) link
// containerd/cgroups and its dependencies (protobuf, cilium/ebpf, dbus,
// logrus: about 2 ms of package initialisation): lib/knob and lib/config,
// which srunwrap and gpuprep-gres use, see lib/isolate only.
package cgwriter

import (
	"fmt"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Writer implements isolate.Writer with containerd/cgroups' managers, which
// take a mount point, so fixture trees work as well as the node's.
type Writer struct{}

// SetV2 writes <mount>/<cg>/cpuset.cpus (cpus not empty: containerd
// treats an empty Cpus as "unset" and writes nothing). The cpuset
// controller must be enabled in every ancestor's cgroup.subtree_control
// for the file to exist; where the cgroup's cgroup.controllers does not
// list it, ToggleControllers enables it from the mount down to the
// parent. It is left enabled afterwards: Slurm's cgroup plugin needs it
// for the jobs, and an empty cpuset.cpus is no limit. A cgroup without
// cgroup.controllers (a fixture's; a kernel's always has one) is written
// as it is.
func (Writer) SetV2(mount, cg, cpus string) error {
	m, err := cgroup2.Load("/"+cg, cgroup2.WithMountpoint(mount))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", cg, err)
	}
	if ctrls, err := m.Controllers(); err == nil && !slices.Contains(ctrls, "cpuset") {
		if err := m.ToggleControllers([]string{"cpuset"}, cgroup2.Enable); err != nil {
			return fmt.Errorf("cgroup %s: enabling cpuset: %w", cg, err)
		}
	}
	if err := m.Update(&cgroup2.Resources{CPU: &cgroup2.CPU{Cpus: cpus}}); err != nil {
		return fmt.Errorf("cgroup %s: write cpuset.cpus = %q: %w", cg, cpus, err)
	}
	return nil
}

// SetV1 creates or updates the v1 cpuset cgroup cg below <root>/cpuset
// (root: the folder holding the v1 hierarchies) with cpus and, when not
// empty, mems. containerd's cpuset controller creates the cgroup when
// absent and first copies the parent's cpus and mems into empty files (a
// v1 cpuset takes no process before both are set).
func (Writer) SetV1(root, cg, cpus, mems string) error {
	ctl := cgroup1.NewCpuset(root)
	if err := ctl.Update(cg, &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: cpus, Mems: mems}}); err != nil {
		return fmt.Errorf("cgroup %s: write cpuset.cpus = %q: %w", cg, cpus, err)
	}
	return nil
}
