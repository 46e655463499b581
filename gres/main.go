// Command gpuprep-gres prints the node's gres.conf (GPUs and MIG devices with
// Slurm core ids and NVLink counts) or its slurm.conf node line, from the
// detected topology, and checks an existing gres.conf against the hardware.
// The command is lib/grescmd.
package main

import (
	"os"

	"gpuprep/lib/cli"
	"gpuprep/lib/grescmd"
)

func main() { os.Exit(grescmd.Main(cli.OS())) }
