// Package slurm holds what gpuprep knows of Slurm itself: the gres.conf
// model, its parser and writer (gresconf*.go), hostlist expressions
// (hostlist.go), the environment Slurm gives a prolog, an epilog and a
// task (jobenv.go, taskenv.go), the one scontrol call gpuprep makes,
// draining a node with a reason (scontrol.go), and where Slurm runs on the
// node: slurmd and slurmstepd processes (daemons.go, slurmd.go, stepd.go)
// and Slurm's cgroups (jobcgroup.go), together layout.go.
//
// The gres.conf rules follow Slurm 22.05 (src/common/parse_config.c,
// src/common/gres.c, src/common/hostlist.c and gres.conf(5)); where this
// package is stricter than Slurm, the doc comment says so. Nothing here
// panics on any input: every error is one line naming the file and line, or
// the environment variable and its value.
package slurm
