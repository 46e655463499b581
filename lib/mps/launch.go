package mps

import (
	"context"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// Launcher starts a control daemon somewhere other than the caller's own
// cgroup. The prolog runs in slurmd's cgroup: a daemon left there would
// count against slurmd, and die with it when systemd restarts slurmd
// (KillMode=control-group). Systemd runs it as a transient unit of its
// own where PID 1 is systemd; Cgroupfs starts it in a cgroup of
// gpuprep's under the cgroup v2 root elsewhere; a test's fake records
// what it is asked.
type Launcher interface {
	// Launch starts the daemon of d: bin is nvidia-cuda-mps-control,
	// env the daemon's whole environment (Exec's: CUDA_VISIBLE_DEVICES,
	// the pipe and log directories, PATH). It returns, under ctx, once
	// the start is done (the daemon itself may take a moment longer to
	// show in /proc), with what the program printed if it ran it, where
	// the daemon runs, in words ("systemd unit gpuprep-mps-....service"),
	// and warn when that is the caller's own cgroup after all.
	Launch(ctx context.Context, d Daemon, bin string, env []string) (out []byte, where, warn string, err error)
	// Done ends what Launch made for d, once the daemon is gone (stops
	// and forgets the unit, removes the cgroup). Nothing to end is no
	// error.
	Done(ctx context.Context, d Daemon) error
	// Cgroup is the cgroup v2 path, as /proc/<pid>/cgroup gives it,
	// that Launch runs d's daemon in: a server left by a dead daemon is
	// told from a user's look-alike by it.
	Cgroup(d Daemon) string
}

// Name is the name of d's daemon for a unit or a cgroup: the name of its
// directory, <user>-<key>.
func Name(d Daemon) string {
	i := strings.LastIndexByte(d.Paths.Dir, '/')
	return d.Paths.Dir[i+1:]
}

// UnitName is the transient unit Systemd runs d's daemon as:
// gpuprep-mps-<user>-<key>.service, the user's name escaped as
// systemd-escape does (a user name may hold characters unit names do not;
// a dash in it becomes \x2d).
func UnitName(d Daemon) string {
	n := Name(d)
	i := strings.LastIndexByte(n, '-') // before the key, 12 hex digits
	return "gpuprep-mps-" + unit.UnitNameEscape(n[:max(i, 0)]) + n[max(i, 0):] + ".service"
}

// scan finds d's daemon and servers in e.Proc (proc.go), servers left by a
// dead daemon by the launcher's cgroup.
func (e *Exec) scan(d Daemon) (procs, error) {
	cgroup := ""
	if e.Launcher != nil {
		cgroup = e.Launcher.Cgroup(d)
	}
	return scan(e.Proc, d.Paths.Pipe, cgroup)
}

// Done ends what e.Launcher made for d (Launcher.Done); with no launcher
// there is nothing to end.
func (e *Exec) Done(ctx context.Context, d Daemon) error {
	if e.Launcher == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	return e.Launcher.Done(ctx, d)
}

// Left returns the pids of the control daemons and MPS servers of d's
// pipe directory that run now (found in /proc as Quit finds them),
// daemons first; none is an empty list.
func (e *Exec) Left(d Daemon) ([]int, error) {
	ps, err := e.scan(d)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range append(ps.daemons, ps.servers...) {
		pids = append(pids, p.pid)
	}
	return pids, nil
}
