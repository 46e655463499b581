// Package isolate keeps host services off a job's cores: it confines the
// cgroups of the node's services (never a job's) to a set of housekeeping
// CPUs through the cpuset controller, reads back what they hold, and puts
// back what they held before.
//
//   - housekeeping.go: the housekeeping CPUs a profile names (an explicit
//     list, or N whole cores per NUMA node or per socket), from lib/topo.
//   - targets.go: which cgroups to confine, never one that holds slurmd,
//     a slurmstepd or a job, nor an ancestor of one: where they run is
//     read from root's slurmd and slurmstepd processes and the cgroups
//     Slurm places from there (lib/slurm's FindLayout; nothing under
//     user.slice or owned by a user is Slurm's); when it cannot be told,
//     nothing is confined. cgroup v2: the other children of every ancestor of
//     Slurm's cgroups (the services beside slurmd, normally in
//     system.slice), except configured exclusions, plus user.slice and
//     init.scope. cgroup v1: the top-level cgroups of the cpuset hierarchy
//     outside Slurm's, and "." for the root cgroup's host processes.
//   - v1root.go: those processes moved into gpuprep.housekeeping and back.
//   - cgroupfs.go: reading and writing cpuset.cpus; writes go through a
//     Writer, lib/isolate/cgwriter's over github.com/containerd/cgroups/v3
//     (its managers take a mount point, so fixture trees work), passed in
//     so that only the prolog and epilog link containerd/cgroups.
//   - state.go: the canonical form of what the confined cgroups hold, the
//     Value of the housekeeping_cpus knob (lib/knob).
//   - look.go: a read-only look at what Targets would do
//     (--check-config): systemd or cgroupfs, and the units kept.
//   - baseline.go: what puts them back, per cgroup always (the cgroups
//     gpuprep wrote, each with what it held before), so that a unit
//     started during a job is never written by a restore.
//
// Nothing here names /sys directly: every path resolves against a
// host.Root.
package isolate
