package srunwrapcmd

import (
	"io"

	"github.com/spf13/pflag"
)

// FlagSet is the flag set srunwrap parses (flags.flagSet), bound to values
// nothing reads: the man page generator (internal/mangen) lists its flags
// and its -h synopsis. It runs nothing. --srun's own arguments are srun's,
// never parsed by it.
func FlagSet() *pflag.FlagSet { return new(flags).flagSet(io.Discard) }
