// Package srunwrapcmd is the command line of srunwrap: `srunwrap [flags]
// [--] cmd args...` runs one task bound to its GPU's NUMA node with the
// right NCCL settings. Not implemented yet: it answers -h and --version and
// exits 1 (cli.Placeholder).
package srunwrapcmd

import "gpuprep/lib/cli"

const synopsis = "usage: srunwrap [flags] [--] cmd args..."

// Main is srunwrap; it returns the exit code.
func Main(e cli.Env) int {
	return cli.Placeholder("srunwrap", synopsis, "the srunwrap issue", e)
}
