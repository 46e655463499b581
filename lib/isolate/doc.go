// Package isolate keeps host services off a job's cores: it confines the
// cgroups of the node's services (never a job's) to a set of housekeeping
// CPUs through the cpuset controller, reads back what they hold, and puts
// back what they held before.
//
//   - housekeeping.go: the housekeeping CPUs a profile names (an explicit
//     list, or N whole cores per NUMA node or per socket), from lib/topo.
//   - targets.go: which cgroups to confine. cgroup v2: the siblings of
//     Slurm's slurmstepd.scope in its slice (normally system.slice), except
//     slurmd and configured exclusions, plus user.slice and init.scope.
//     cgroup v1: the top-level cgroups of the cpuset hierarchy outside
//     Slurm's slurm/ tree, and "." for the root cgroup's host processes.
//   - v1root.go: those processes moved into gpuprep.housekeeping and back.
//   - cgroupfs.go: reading and writing cpuset.cpus; writes go through a
//     Writer, lib/isolate/cgwriter's over github.com/containerd/cgroups/v3
//     (its managers take a mount point, so fixture trees work), passed in
//     so that only the prolog and epilog link containerd/cgroups.
//   - state.go: the canonical form of what the confined cgroups hold, the
//     Value of the housekeeping_cpus knob (lib/knob).
//
// Nothing here names /sys directly: every path resolves against a
// host.Root.
package isolate
