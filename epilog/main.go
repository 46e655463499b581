// Command gpuprep-epilog is the Slurm Epilog (Epilog= in slurm.conf): it
// records drift of every knob the prolog set and restores the node when the
// last job using a knob ends. --report prints the drift history. The command
// is lib/hookcmd, its engine lib/hook.
package main

import (
	"os"

	"gpuprep/lib/cli"
	"gpuprep/lib/hookcmd"
)

func main() { os.Exit(hookcmd.Epilog(cli.OS())) }
