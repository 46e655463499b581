// Package mpsfake is an mps.Control for tests of what uses lib/mps (the
// mps knob, the prolog and epilog): daemons are entries in memory, keyed
// by pipe directory, so no process runs. lib/mps's own tests run its Exec
// against a fake nvidia-cuda-mps-control program instead.
package mpsfake

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"gpuprep/lib/mps"
)

// Control records daemons started and stopped. Its methods are safe for
// concurrent use (the hooks read knobs in parallel).
type Control struct {
	mu      sync.Mutex
	running map[string]mps.Daemon // by pipe directory
	nextPID int
	pids    map[string]int
	// Started and Quitted list the pipe directories of every Start and of
	// every Quit that found a daemon, in order; Ended those of every Done.
	Started, Quitted, Ended []string
}

var _ mps.Control = (*Control)(nil)

// New returns a Control with no daemon running.
func New() *Control {
	return &Control{running: map[string]mps.Daemon{}, pids: map[string]int{}, nextPID: 1000}
}

// Start records d as running, as mps.Exec.Start would leave it: its pipe
// directory (made by mps.Create) must exist, and is handed to d's user.
func (c *Control) Start(_ context.Context, d mps.Daemon) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := mps.Key(d.UUIDs); err != nil {
		return 0, err
	}
	if pid, ok := c.pids[d.Paths.Pipe]; ok {
		return 0, fmt.Errorf("mps: %w for %s (pid %d)", mps.ErrRunning, d.Paths.Pipe, pid)
	}
	if _, err := os.Stat(d.Paths.Pipe); err != nil {
		return 0, fmt.Errorf("fake: no pipe directory: %w", err)
	}
	if err := mps.Grant(d.Paths, d.UID); err != nil {
		return 0, err
	}
	c.nextPID++
	c.running[d.Paths.Pipe], c.pids[d.Paths.Pipe] = d, c.nextPID
	c.Started = append(c.Started, d.Paths.Pipe)
	return c.nextPID, nil
}

// Servers returns no server: no client ever connects to a fake.
func (c *Control) Servers(_ context.Context, d mps.Daemon) ([]int, error) {
	if pid, _ := c.Alive(d); pid == 0 {
		return nil, fmt.Errorf("mps: get_server_list: %w for %s", mps.ErrNotRunning, d.Paths.Pipe)
	}
	return nil, nil
}

// Quit stops d's daemon.
func (c *Control) Quit(_ context.Context, d mps.Daemon, _ time.Duration) (mps.Stopped, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, ok := c.pids[d.Paths.Pipe]
	if !ok {
		return mps.Stopped{}, nil
	}
	delete(c.running, d.Paths.Pipe)
	delete(c.pids, d.Paths.Pipe)
	c.Quitted = append(c.Quitted, d.Paths.Pipe)
	return mps.Stopped{Daemon: pid, Quit: true}, nil
}

// Alive returns the pid of d's daemon, 0 when none runs.
func (c *Control) Alive(d mps.Daemon) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pids[d.Paths.Pipe], nil
}

// Left lists d's daemon when it still runs.
func (c *Control) Left(d mps.Daemon) ([]int, error) {
	if pid, _ := c.Alive(d); pid > 0 {
		return []int{pid}, nil
	}
	return nil, nil
}

// Done records the call.
func (c *Control) Done(_ context.Context, d mps.Daemon) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Ended = append(c.Ended, d.Paths.Pipe)
	return nil
}

// Kill ends the daemon of the pipe directory pipe behind gpuprep's back,
// as a crash or an admin would.
func (c *Control) Kill(pipe string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pids[pipe]
	delete(c.running, pipe)
	delete(c.pids, pipe)
	return ok
}

// Running lists the pipe directories of the daemons running, sorted.
func (c *Control) Running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for p := range c.pids {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Daemon returns the daemon running for pipe, as started.
func (c *Control) Daemon(pipe string) (mps.Daemon, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.running[pipe]
	return d, ok
}
