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
	if len(reason) > MaxReasonLen {
		reason = reason[:MaxReasonLen]
	}
	_, err := scontrol(ctx, "update", "nodename="+node, "state=drain", "reason="+reason)
	return err
}

// Resume returns a drained node to service: `scontrol update nodename=NODE
// state=resume`, run as Drain runs it.
func Resume(ctx context.Context, node string) error {
	_, err := scontrol(ctx, "update", "nodename="+node, "state=resume")
	return err
}

// scontrol runs the installed scontrol with args (no shell) until ctx ends
// and returns what it printed.
func scontrol(ctx context.Context, args ...string) (string, error) {
	path := ""
	for _, p := range scontrolPaths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			path = p
			break
		}
	}
	if path == "" {
		return "", ErrNoScontrol
	}
	cmd := exec.CommandContext(ctx, path, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", &ScontrolError{Err: err, Output: string(out)}
	}
	return string(out), nil
}
