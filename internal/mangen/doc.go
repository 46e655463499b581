// Package mangen generates gpuprep's man pages so that they cannot drift
// from the code: each program's SYNOPSIS and OPTIONS come from the flag set
// the program itself parses (lib/hookcmd, lib/healthcmd, lib/grescmd,
// lib/srunwrapcmd: FlagSet), gpuprep.toml(5)'s tables and keys from
// lib/config's Config type, their built-in values from lib/config's
// defaults.toml and their descriptions from examples/gpuprep.toml's
// comments, the knobs from lib/knob's registry. The hand-written rest
// (NAME, DESCRIPTION, EXIT STATUS, FILES, ENVIRONMENT, EXAMPLES, SEE ALSO)
// is docs/man/*.txt. cmd/mangen writes them; the packaging gzips them.
package mangen
