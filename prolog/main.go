// Command gpuprep-prolog is the Slurm Prolog (Prolog= in slurm.conf): it
// applies the job's tuning profile, journaling every previous value first.
// Exit 0 lets the job run; 1 is a node problem, with the reason as the first
// stderr line; 2 is bad input. The command is lib/hookcmd, its engine
// lib/hook.
package main

import (
	"os"

	"gpuprep/lib/cli"
	"gpuprep/lib/hookcmd"
)

func main() { os.Exit(hookcmd.Prolog(cli.OS())) }
