package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// Daemon is one control daemon: the GPUs it serves and its directories.
type Daemon struct {
	UUIDs []string // CUDA_VISIBLE_DEVICES, in the job's GPU index order
	Paths Paths    // from Dirs, made by Create
	UID   int      // the job's user, given search access to the pipe directory (Grant)
}

// Control starts, asks and stops control daemons. Exec runs the real
// program; a caller's tests may fake it.
type Control interface {
	// Start runs `nvidia-cuda-mps-control -d` for d, hands the pipe
	// directory to d's user and returns the daemon's pid; ErrRunning when
	// one already runs for d's pipe directory.
	Start(ctx context.Context, d Daemon) (int, error)
	// Servers returns the pids get_server_list prints.
	Servers(ctx context.Context, d Daemon) ([]int, error)
	// Quit sends quit, waits up to wait for the daemon and its servers
	// to end, then kills what is left.
	Quit(ctx context.Context, d Daemon, wait time.Duration) (Stopped, error)
	// Alive returns the pid of d's control daemon, 0 when none runs.
	Alive(d Daemon) (int, error)
	// Left returns the pids of d's daemons and servers still running.
	Left(d Daemon) ([]int, error)
	// Done ends what the launcher made for d (a unit, a cgroup) once
	// its daemon is gone; nothing to end is no error.
	Done(ctx context.Context, d Daemon) error
}

// ErrRunning is wrapped by Start's error when a daemon already runs for
// the pipe directory; ErrNotRunning by Servers' when none does.
var (
	ErrRunning    = errors.New("a control daemon already runs")
	ErrNotRunning = errors.New("no control daemon runs")
)

// DefaultTimeout bounds each run of the control program, and Start's
// wait for the daemon to show in /proc.
const DefaultTimeout = 10 * time.Second

// Exec runs nvidia-cuda-mps-control: argv only, no shell, an environment
// of the MPS variables and PATH alone, each run bounded by Timeout.
type Exec struct {
	Bin     string        // the program's path on this machine (Find)
	Proc    host.Root     // the root whose /proc is read ("/" on a node)
	Timeout time.Duration // per run; 0 means DefaultTimeout
	// Launcher, when set, starts the daemon outside the caller's cgroup
	// (Systemd, Cgroupfs; launch.go) and ends what it made (Done); nil
	// runs it as a child of the caller, in its cgroup.
	Launcher Launcher
	// Log receives where each daemon runs, and the launcher's warnings;
	// nil: slog.Default().
	Log *slog.Logger
}

var _ Control = (*Exec)(nil)

func (e *Exec) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// env is the environment of every run for d: its GPUs, its directories,
// and a PATH that starts with the program's own directory (where the
// daemon finds nvidia-cuda-mps-server).
func (e *Exec) env(d Daemon) []string {
	return []string{
		DevicesEnv + "=" + strings.Join(d.UUIDs, ","),
		PipeEnv + "=" + d.Paths.Pipe,
		LogEnv + "=" + d.Paths.Log,
		"PATH=" + filepath.Dir(e.Bin) + ":/usr/sbin:/usr/bin:/sbin:/bin",
	}
}

// maxOutput bounds what a run's output keeps.
const maxOutput = 64 << 10

// capped keeps the first maxOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// run runs the program for d with args and stdin (nil: /dev/null) in a
// session of its own, from /, and returns stdout and stderr together
// (runCmd).
func (e *Exec) run(ctx context.Context, d Daemon, stdin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	out, err := runCmd(ctx, append([]string{e.Bin}, args...), e.env(d), stdin, nil)
	if err != nil {
		what := strings.Join(args, " ")
		if stdin != "" {
			what = strings.TrimSpace(stdin)
		}
		return out, e.runError(ctx, d, what, out, err)
	}
	return out, nil
}

// runError is the error of a run of the program for d (what: its
// arguments or its input), with the first line it printed.
func (e *Exec) runError(ctx context.Context, d Daemon, what string, out []byte, err error) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (timeout %s)", err, e.timeout())
	}
	return fmt.Errorf("mps: %s %s (%s=%s): %w%s", filepath.Base(e.Bin), what, PipeEnv, d.Paths.Pipe, err, firstLine(out))
}

// launch starts d's daemon: `-d` as run does, or through e.Launcher,
// which logs where the daemon runs and warns when that is the caller's
// own cgroup.
func (e *Exec) launch(ctx context.Context, d Daemon) error {
	if e.Launcher == nil {
		_, err := e.run(ctx, d, "", "-d")
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	out, where, warn, err := e.Launcher.Launch(ctx, d, e.Bin, e.env(d))
	if warn != "" {
		e.logger().Warn(warn, "pipe", d.Paths.Pipe)
	}
	if err != nil {
		return e.runError(ctx, d, "(start)", out, err)
	}
	e.logger().Info("MPS control daemon started", "pipe", d.Paths.Pipe, "runs_in", where)
	return nil
}

func (e *Exec) logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// runCmd runs argv with env and stdin ("": /dev/null) in a session of its
// own, from /, and returns stdout and stderr together, the first 64 KiB.
// prep, when set, may change the command before it starts (a cgroup to
// start in). A program whose child keeps the output pipe open is waited
// for 500 ms, not more, and is no error when it exited 0.
func runCmd(ctx context.Context, argv, env []string, stdin string, prep func(*exec.Cmd)) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 500 * time.Millisecond
	if prep != nil {
		prep(cmd)
	}
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited 0; a child of its kept the pipe
	}
	return out.Bytes(), err
}

// firstLine is ": " and the first non-empty line of out, or "".
func firstLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return ": " + textfmt.Clip(l, 200)
		}
	}
	return ""
}

// Start runs `nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES set
// to d's UUIDs and the pipe and log directories to d's (made by Create),
// waits, up to the timeout, for the daemon to show in /proc, gives d's
// user search access to the pipe directory (Grant) and returns the
// daemon's pid. When
// the hand-over fails the daemon is stopped again (Quit, 1 s). Before the
// user gets access, the daemon's files are capped (capFiles).
func (e *Exec) Start(ctx context.Context, d Daemon) (int, error) {
	if _, err := Key(d.UUIDs); err != nil {
		return 0, err
	}
	if d.Paths.Pipe == "" || d.Paths.Log == "" {
		return 0, fmt.Errorf("mps: daemon without pipe or log directory (Dirs)")
	}
	if pid, err := e.Alive(d); err != nil {
		return 0, err
	} else if pid > 0 {
		return 0, fmt.Errorf("mps: %w for %s (pid %d)", ErrRunning, d.Paths.Pipe, pid)
	}
	if err := e.launch(ctx, d); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(e.timeout())
	for {
		pid, err := e.Alive(d)
		if err != nil {
			return 0, err
		}
		if pid > 0 {
			if err := e.prepare(pid, d); err != nil {
				e.Quit(context.WithoutCancel(ctx), d, time.Second)
				e.Done(context.WithoutCancel(ctx), d)
				return 0, err
			}
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("mps: %s -d exited 0 but no daemon for %s shows in /proc after %s (see %s/control.log)", ControlName, d.Paths.Pipe, e.timeout(), d.Paths.Log)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("mps: waiting for the daemon of %s: %w", d.Paths.Pipe, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// prepare readies the running daemon pid of d for its user: its files
// capped (on this machine's /proc only), then the pipe directory opened
// to the user (Grant).
func (e *Exec) prepare(pid int, d Daemon) error {
	if e.Proc.IsHost() {
		if err := capFiles(pid); err != nil {
			return fmt.Errorf("mps: daemon of %s: %w", d.Paths.Pipe, err)
		}
	}
	return Grant(d.Paths, d.UID)
}

// MaxLogFile bounds each file the daemon and its servers write (their
// logs, control.log and server.log, in the log directory on /run): a job's
// user can make them log (a line or two per connection to the control
// socket), and /run is a small tmpfs that systemd and slurmd need.
const MaxLogFile = 64 << 20

// capFiles sets RLIMIT_FSIZE of process pid (the daemon, as it starts,
// before any client: the servers it starts later inherit it) to
// MaxLogFile, so no write takes a file past it: the kernel refuses it
// (EFBIG, and SIGXFSZ, which ends a process that does not handle it: MPS
// then ends for that user's jobs, recorded as drift).
func capFiles(pid int) error {
	lim := unix.Rlimit{Cur: MaxLogFile, Max: MaxLogFile}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		return fmt.Errorf("prlimit %d RLIMIT_FSIZE %d: %w", pid, MaxLogFile, err)
	}
	return nil
}

// Servers sends get_server_list to d's daemon and returns the pids it
// prints, one a line. No daemon is an error wrapping ErrNotRunning
// (found in /proc before the program runs, so that it never waits for one).
func (e *Exec) Servers(ctx context.Context, d Daemon) ([]int, error) {
	if pid, err := e.Alive(d); err != nil {
		return nil, err
	} else if pid == 0 {
		return nil, fmt.Errorf("mps: get_server_list: %w for %s", ErrNotRunning, d.Paths.Pipe)
	}
	out, err := e.run(ctx, d, "get_server_list\n")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		pid, err := strconv.Atoi(l)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("mps: get_server_list for %s: unexpected line %q", d.Paths.Pipe, l)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Alive returns the pid of the control daemon of d's pipe directory,
// found in /proc (cmdline and environ; scan), 0 when none runs.
func (e *Exec) Alive(d Daemon) (int, error) {
	if d.Paths.Pipe == "" {
		return 0, fmt.Errorf("mps: daemon without pipe directory (Dirs)")
	}
	ps, err := e.scan(d)
	if err != nil || len(ps.daemons) == 0 {
		return 0, err
	}
	return ps.daemons[0].pid, nil
}
