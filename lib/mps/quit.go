package mps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// Stopped says how Quit ended a daemon.
type Stopped struct {
	Daemon int   // the control daemon's pid; 0 when none ran
	Quit   bool  // the daemon and its servers ended after quit, in time
	Killed []int // pids killed with SIGKILL once the wait was over
}

// killGrace bounds the wait for killed processes to be gone.
const killGrace = 2 * time.Second

// Quit stops d's daemon: it sends quit (the program run with "quit" on
// stdin; plain quit, which every driver knows, and which waits for
// clients still attached: "quit -t N" is newer), then watches /proc until
// the daemon and its servers are gone, for up to wait (less when ctx
// ends sooner). What still runs then, the daemon first, is killed with
// SIGKILL (through a pidfd where the kernel has them, after checking the
// pid still is the same process) and listed in Killed. Servers that
// outlive a dead daemon are found and killed too. Nothing running is no
// error. Only the host's /proc is acted on: with a fixture root Quit
// refuses before signalling anything.
func (e *Exec) Quit(ctx context.Context, d Daemon, wait time.Duration) (Stopped, error) {
	if d.Paths.Pipe == "" {
		return Stopped{}, fmt.Errorf("mps: quit: daemon without pipe directory (Dirs)")
	}
	ps, err := e.scan(d)
	if err != nil {
		return Stopped{}, err
	}
	var st Stopped
	if len(ps.daemons) > 0 {
		st.Daemon = ps.daemons[0].pid
	}
	seen := append(slices.Clone(ps.daemons), ps.servers...)
	if len(seen) == 0 {
		return st, nil
	}
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if len(ps.daemons) > 0 {
		qctx, cancel := context.WithDeadline(ctx, deadline)
		e.run(qctx, d, "quit\n") // whether it worked, /proc tells
		cancel()
	}
	for {
		left, err := e.left(d, &seen)
		if err != nil {
			return st, err
		}
		if len(left) == 0 {
			st.Quit = st.Daemon > 0
			return st, nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return st, e.kill(d, left, &st)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// left returns what of seen still runs, daemons first, adding to seen the
// daemons and servers of d's pipe directory that appeared since.
func (e *Exec) left(d Daemon, seen *[]proc) ([]proc, error) {
	ps, err := e.scan(d)
	if err != nil {
		return nil, err
	}
	for _, p := range append(ps.daemons, ps.servers...) {
		if !slices.Contains(*seen, p) {
			*seen = append(*seen, p)
		}
	}
	var left []proc
	for _, p := range *seen {
		if running(e.Proc, p) {
			left = append(left, p)
		}
	}
	return left, nil
}

// kill sends SIGKILL to each of procs still running, records them in st,
// and waits up to killGrace for them to be gone.
func (e *Exec) kill(d Daemon, procs []proc, st *Stopped) error {
	if !e.Proc.IsHost() {
		return fmt.Errorf("mps: quit %s: not killing pids read from the fixture %s/proc", d.Paths.Pipe, e.Proc.Dir())
	}
	var errs []string
	for _, p := range procs {
		killed, err := killProc(e.Proc, p)
		if err != nil {
			errs = append(errs, err.Error())
		}
		if killed {
			st.Killed = append(st.Killed, p.pid)
		}
	}
	until := time.Now().Add(killGrace)
	for _, p := range procs {
		for running(e.Proc, p) {
			if time.Now().After(until) {
				errs = append(errs, fmt.Sprintf("pid %d still runs %s after SIGKILL", p.pid, killGrace))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("mps: quit %s: %s", d.Paths.Pipe, strings.Join(errs, "; "))
	}
	return nil
}

// killProc sends SIGKILL to p if it still is the process seen (same pid
// and start time). A pidfd, opened before the check, pins the process so
// a pid reused in between is never signalled; kernels before 5.3 lack
// pidfd_open, and there the check and kill(2) are as close as can be.
// It says whether a signal went out.
func killProc(r host.Root, p proc) (bool, error) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return false, nil
	case errors.Is(err, unix.ENOSYS):
		if !running(r, p) {
			return false, nil
		}
		err = unix.Kill(p.pid, unix.SIGKILL)
	case err != nil:
		return false, fmt.Errorf("pidfd_open %d: %w", p.pid, err)
	default:
		defer unix.Close(fd)
		if !running(r, p) {
			return false, nil
		}
		err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kill %d: %w", p.pid, err)
	}
	return true, nil
}
