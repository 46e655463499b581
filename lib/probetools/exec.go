package probetools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits on what a tool's run keeps, and how a run that outlives its time
// is ended.
var (
	// maxStdout and maxStderr cap what is kept of each stream; the rest is
	// read and dropped, so that the tool never blocks on a full pipe.
	maxStdout = 4 << 20
	maxStderr = 64 << 10
	// killGrace is how long a tool has after SIGTERM (sent to its whole
	// process group when its time is up) before the group gets SIGKILL.
	// dcgmi needs it: on SIGTERM it asks the host engine to stop the
	// diagnostic, and waits up to 25 s for that.
	killGrace = 30 * time.Second
)

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// outcome is what one run of a tool left: its output, how it ended and
// how long it took.
type outcome struct {
	Stdout, Stderr string
	Seconds        float64
	// Err is nil when the tool exited 0; an *exec.ExitError, or an error
	// saying it timed out, otherwise.
	Err      error
	TimedOut bool
	// Cut says that output was dropped past maxStdout or maxStderr.
	Cut bool
}

// proc is a started tool.
type proc struct {
	cmd      *exec.Cmd
	ctx      context.Context
	cancel   context.CancelFunc
	timeout  time.Duration
	out, err *capped
	begun    time.Time

	mu     sync.Mutex
	killer *time.Timer
}

// start starts path with args (argv, no shell) in a process group of its
// own, stdin /dev/null, stdout and stderr kept apart and capped. When
// timeout passes or ctx ends, the group gets SIGTERM, and SIGKILL
// killGrace later if it is still there.
func start(ctx context.Context, timeout time.Duration, path string, args ...string) (*proc, error) {
	p := &proc{timeout: timeout, out: &capped{max: maxStdout}, err: &capped{max: maxStderr}}
	p.ctx, p.cancel = context.WithTimeout(ctx, timeout)
	cmd := exec.CommandContext(p.ctx, path, args...)
	cmd.Stdin = nil // exec reads nil as /dev/null
	cmd.Stdout, cmd.Stderr = p.out, p.err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = p.terminate
	// Wait returns this long after the kill even if a grandchild that
	// left the group still holds the pipes.
	cmd.WaitDelay = killGrace + 2*time.Second
	p.cmd = cmd
	p.begun = time.Now()
	if err := cmd.Start(); err != nil {
		p.cancel()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return p, nil
}

// terminate sends SIGTERM to the process group and arms its SIGKILL.
func (p *proc) terminate() error {
	pgid := p.cmd.Process.Pid
	err := syscall.Kill(-pgid, syscall.SIGTERM)
	p.mu.Lock()
	p.killer = time.AfterFunc(killGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	p.mu.Unlock()
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// stop ends the tool now (as if its time were up, without saying it
// timed out).
func (p *proc) stop() { p.cancel() }

// wait waits for the tool to end and says how it ended.
func (p *proc) wait() outcome {
	err := p.cmd.Wait()
	p.mu.Lock()
	if p.killer != nil {
		p.killer.Stop()
	}
	p.mu.Unlock()
	timedOut := errors.Is(p.ctx.Err(), context.DeadlineExceeded)
	p.cancel()
	o := outcome{Stdout: p.out.buf.String(), Stderr: p.err.buf.String(),
		Seconds: time.Since(p.begun).Seconds(), Err: err, TimedOut: timedOut,
		Cut: p.out.dropped > 0 || p.err.dropped > 0}
	if timedOut {
		o.Err = fmt.Errorf("timed out after %s: %w", p.timeout, context.DeadlineExceeded)
	}
	return o
}

// runTool runs path with args to its end (see start).
func runTool(ctx context.Context, timeout time.Duration, path string, args ...string) outcome {
	p, err := start(ctx, timeout, path, args...)
	if err != nil {
		return outcome{Err: err}
	}
	return p.wait()
}

// failure says why a run that produced no usable result failed: its error
// and the last lines of its stderr (or stdout when stderr is empty).
func failure(o outcome, what string) string {
	msg := what
	if o.Err != nil {
		msg = fmt.Sprintf("%s: %v", what, o.Err)
	}
	tail := lastLines(o.Stderr, 3)
	if tail == "" {
		tail = lastLines(o.Stdout, 3)
	}
	if tail != "" {
		msg += ": " + tail
	}
	if o.Cut {
		msg += fmt.Sprintf(" (output cut at %d bytes)", maxStdout)
	}
	return msg
}

// lastLines is the last n non-empty lines of s, joined with " | ".
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " | ")
}
