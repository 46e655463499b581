// Command gpuprep-prolog is the Slurm Prolog (Prolog= in slurm.conf): it
// applies the job's tuning profile, journaling every previous value first.
// Exit 0 lets the job run; 1 is a node problem, with the reason as the first
// stderr line; 2 is bad input.
package main

import (
	"os"

	"gpuprep/lib/hook"
)

func main() { os.Exit(hook.Main("prolog", os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }
