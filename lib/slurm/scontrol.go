package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// scontrolPaths are where Drain looks for scontrol, in order: slurmd runs
// hooks with an almost empty PATH, so it is not searched.
var scontrolPaths = []string{"/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol"}

// MaxReasonLen is the longest drain reason Drain passes on; a longer one is
// cut.
const MaxReasonLen = 200

// ErrNoScontrol is Drain's error when no scontrol is installed.
var ErrNoScontrol = errors.New("scontrol not found")

// ScontrolError is a failed scontrol run: its error and what it printed.
type ScontrolError struct {
	Err    error
	Output string
}

func (e *ScontrolError) Error() string { return fmt.Sprintf("scontrol: %v: %s", e.Err, e.Output) }

func (e *ScontrolError) Unwrap() error { return e.Err }

// Drain drains node with reason: `scontrol update nodename=NODE state=drain
// reason=REASON`, executed with that argv (never through a shell, so the
// reason is one argument whatever it holds), and killed when ctx ends.
// reason is cut to MaxReasonLen bytes.
func Drain(ctx context.Context, node, reason string) error {
	scontrol := ""
	for _, p := range scontrolPaths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			scontrol = p
			break
		}
	}
	if scontrol == "" {
		return ErrNoScontrol
	}
	if len(reason) > MaxReasonLen {
		reason = reason[:MaxReasonLen]
	}
	cmd := exec.CommandContext(ctx, scontrol, "update", "nodename="+node, "state=drain", "reason="+reason)
	if out, err := cmd.CombinedOutput(); err != nil {
		return &ScontrolError{Err: err, Output: string(out)}
	}
	return nil
}
