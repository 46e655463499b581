// Command gpuprep-prolog is the Slurm Prolog: it checks the node, applies the
// job's tuning profile and journals every previous value. Not implemented yet.
package main

import (
	"os"

	"gpuprep/lib/cli"
)

func main() {
	os.Exit(cli.Placeholder("gpuprep-prolog", "usage: gpuprep-prolog [flags]   (Prolog= in slurm.conf)", "issue 3: prolog and epilog", os.Args[1:]))
}
