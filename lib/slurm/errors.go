package slurm

import (
	"fmt"
	"strconv"
)

// ParseError is a problem in a configuration file: File as the caller named
// it, the 1-based Line (0 when the problem is the whole file), and a one-line
// Msg. Error() reads "gres.conf:12: Links= value \"1,x\": not a number".
// Warnings use the same type.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e ParseError) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// EnvError is a Slurm environment variable that is missing or malformed.
// Error() reads `SLURM_JOB_GPUS="0,x": not a GPU index list`, or
// `SLURM_JOB_ID is not set`.
type EnvError struct {
	Var   string
	Value string
	Unset bool
	Msg   string
}

func (e *EnvError) Error() string {
	if e.Unset {
		if e.Msg == "" {
			return e.Var + " is not set"
		}
		return e.Var + " is not set: " + e.Msg
	}
	return e.Var + "=" + quote(e.Value) + ": " + e.Msg
}

// quote renders a value for a one-line message: Go-quoted (so newlines and
// control bytes are escaped) and clipped to a readable length.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
