// Command srunwrap runs one Slurm task bound to its GPU's NUMA node with the
// right NCCL settings; the command is lib/srunwrapcmd.
package main

import (
	"os"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/srunwrapcmd"
)

func main() { os.Exit(srunwrapcmd.Main(cmdenv.OS())) }
