// Command gpuprep-epilog is the Slurm Epilog (Epilog= in slurm.conf): it
// records drift of every knob the prolog set and restores the node when the
// last job using a knob ends. --report prints the drift history.
package main

import (
	"os"

	"gpuprep/lib/hook"
)

func main() { os.Exit(hook.Main("epilog", os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }
