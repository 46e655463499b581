package slurm

import "strconv"

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
	return e.Var + "=" + Quote(e.Value) + ": " + e.Msg
}

// Quote renders a value for a one-line message: Go-quoted (so newlines and
// control bytes are escaped) and clipped to a readable length. Every value
// that a message about Slurm's files or variables names is quoted so
// (lib/gresconf's too).
func Quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
