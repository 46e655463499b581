// Command srunwrap runs one Slurm task bound to its GPU's NUMA node with the
// right NCCL settings. Not implemented yet.
package main

import (
	"os"

	"gpuprep/lib/cli"
)

func main() {
	os.Exit(cli.Placeholder("srunwrap", "usage: srunwrap [flags] [--] cmd args...", "the srunwrap issue", os.Args[1:]))
}
