// Command gpuprep-epilog is the Slurm Epilog: it records drift and restores the
// node. Not implemented yet.
package main

import (
	"os"

	"gpuprep/lib/cli"
)

func main() {
	os.Exit(cli.Placeholder("gpuprep-epilog", "usage: gpuprep-epilog [flags]   (Epilog= in slurm.conf)", "issue 3: prolog and epilog", os.Args[1:]))
}
