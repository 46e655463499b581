// Package slurm holds what gpuprep knows of Slurm itself, gres.conf apart
// (lib/gresconf): hostlist expressions, read and written (hostlist.go),
// slurm.conf and its node lines (slurmconf.go, slurmconf_nodes.go), the
// environment Slurm gives a prolog, an epilog and a task (jobenv.go,
// taskenv.go), scontrol: a node's state, draining and resuming it
// (nodestate.go, scontrol.go), and where Slurm runs on the node: slurmd
// and slurmstepd processes (daemons.go, slurmd.go, stepd.go) and Slurm's
// cgroups (jobcgroup.go), together layout.go.
//
// The rules follow Slurm 22.05 (src/common/parse_config.c,
// src/common/hostlist.c); where this package is stricter than Slurm, the
// doc comment says so. Nothing here panics on any input: every error is
// one line naming the file and line, or the environment variable and its
// value.
package slurm
