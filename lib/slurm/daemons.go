package slurm

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"gpuprep/lib/host"
)

// Slurm's daemons on a node, found in /proc: slurmd (one per node name it
// serves) and slurmstepd (one per running job step, and on cgroup v2
// slurmd's "slurmstepd infinity" that keeps slurmstepd.scope alive).

// Daemon is a slurmd or slurmstepd process.
type Daemon struct {
	PID int
	// Exe is where /proc/<pid>/exe points ("/usr/sbin/slurmd"), without
	// the " (deleted)" the kernel adds once the file was replaced.
	Exe string
	// Cmdline is /proc/<pid>/cmdline, arguments joined by blanks: a job
	// step's slurmstepd rewrites it to "slurmstepd: [12.extern]".
	Cmdline string
	// Cgroups is /proc/<pid>/cgroup: the cgroup v2 path under "" (the
	// "0::" line) and each v1 hierarchy's path under each of its
	// controllers ("cpuset", "freezer", "name=systemd"). Paths are as the
	// kernel gives them, relative to the reader's cgroup namespace
	// ("/system.slice/slurmd.service").
	Cgroups map[string]string
}

// Daemons are the Slurm daemons running on a node.
type Daemons struct {
	Slurmd, Stepd []Daemon
}

// Executable names of Slurm's node daemons.
const (
	SlurmdName = "slurmd"
	StepdName  = "slurmstepd"
)

// daemonName is the Slurm daemon (SlurmdName, StepdName) an executable's
// file name is, "" for neither: the daemon's own name, or Debian's and
// Ubuntu's (/usr/sbin/slurmd is a link, through update-alternatives, to
// /usr/sbin/slurmd-wlm, which /proc/<pid>/exe names; slurmd-wlm-emulator
// for the emulator build).
func daemonName(base string) string {
	for _, n := range []string{SlurmdName, StepdName} {
		if base == n || base == n+"-wlm" || base == n+"-wlm-emulator" {
			return n
		}
	}
	return ""
}

// maxProcs bounds the /proc entries ScanDaemons examines, so that a node
// with an absurd number of processes cannot stall a prolog; more is an
// error (nothing can be told).
const maxProcs = 1 << 17

// ScanDaemons finds every slurmd and slurmstepd process in /proc: a process
// whose real user (/proc/<pid>/status, Uid:) is root and whose
// /proc/<pid>/exe is a file named slurmd or slurmstepd (or Debian's
// slurmd-wlm, slurmstepd-wlm: daemonName). A user can start a process with
// any name, command line and exe, even a copy of slurmstepd or one whose exe
// cannot be read, but not as root: a process of any other user is never a
// candidate and never makes the scan fail. A process that exits meanwhile,
// or a kernel thread (no exe), is skipped. Any other error (/proc
// unreadable; a root process whose exe cannot be read while its
// /proc/<pid>/comm or command line names a Slurm daemon) is returned: then
// what runs on the node cannot be told.
func ScanDaemons(r host.Root) (*Daemons, error) {
	pids, err := r.PIDs()
	if err != nil {
		return nil, fmt.Errorf("slurm daemons: %w", err)
	}
	d := &Daemons{}
	n := 0
	for _, pid := range pids {
		if n++; n > maxProcs {
			return nil, fmt.Errorf("slurm daemons: more than %d processes in /proc: not examined", maxProcs)
		}
		p, ok, err := examine(r, pid)
		if err != nil {
			return nil, fmt.Errorf("slurm daemons: %w", err)
		}
		if !ok {
			continue
		}
		if daemonName(path.Base(p.Exe)) == SlurmdName {
			d.Slurmd = append(d.Slurmd, p)
		} else {
			d.Stepd = append(d.Stepd, p)
		}
	}
	return d, nil
}

// examine reads one process: ok says it is a root slurmd or slurmstepd.
// Nothing is decided on its exe before its real user: the exe link is read
// first only because it is the cheaper file (a readlink against formatting
// /proc/<pid>/status, about a sixth of the cost over a node's processes),
// and status is read only for a process whose exe names a daemon or could
// not be read.
func examine(r host.Root, pid int) (d Daemon, ok bool, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(r.Path(dir + "/exe"))
	if err != nil {
		return Daemon{}, false, unreadableExe(r, pid, err)
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if daemonName(path.Base(exe)) == "" {
		return Daemon{}, false, nil
	}
	if root, err := rootProcess(r, pid); err != nil || !root {
		return Daemon{}, false, err // a user's copy, or gone
	}
	d = Daemon{PID: pid, Exe: exe}
	cmd, err := r.ReadFile(dir + "/cmdline")
	if err == nil {
		d.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		d.Cgroups, err = r.ProcCgroups(dir + "/cgroup")
	}
	if err != nil {
		if host.ProcGone(err) {
			return Daemon{}, false, nil
		}
		return Daemon{}, false, fmt.Errorf("process %d: %w", pid, err)
	}
	return d, true, nil
}

// unreadableExe judges a process whose /proc/<pid>/exe could not be read
// (exeErr: EACCES, ENAMETOOLONG for a path longer than PATH_MAX): nil when
// it exited or is not root's (never Slurm's, whatever it is named); an
// error when it is root's and named like a Slurm daemon, since then
// whether it is one cannot be told.
func unreadableExe(r host.Root, pid int, exeErr error) error {
	if host.ProcGone(exeErr) {
		return nil
	}
	root, err := rootProcess(r, pid)
	if err != nil || !root {
		return err
	}
	named, err := namedLikeDaemon(r, "/proc/"+strconv.Itoa(pid))
	switch {
	case err != nil && host.ProcGone(err):
		return nil
	case err != nil:
		return fmt.Errorf("process %d: %w", pid, err)
	case named:
		return fmt.Errorf("root process %d, named like a Slurm daemon: %w", pid, exeErr)
	}
	return nil
}

// rootProcess says whether process pid runs as root: its real user id
// (/proc/<pid>/status, Uid:) is 0. One that exited is not (false, nil).
func rootProcess(r host.Root, pid int) (bool, error) {
	uid, err := r.RealUID(pid)
	if err != nil {
		if host.ProcGone(err) {
			return false, nil
		}
		return false, fmt.Errorf("process %d: %w", pid, err)
	}
	return uid == 0, nil
}

// namedLikeDaemon says whether a process's command name (/proc/<pid>/comm)
// or its command line's first word names slurmd or slurmstepd.
func namedLikeDaemon(r host.Root, dir string) (bool, error) {
	comm, err := r.ReadString(dir + "/comm")
	if err != nil {
		return false, err
	}
	if daemonName(comm) != "" {
		return true, nil
	}
	cmd, err := r.ReadFile(dir + "/cmdline")
	if err != nil {
		return false, err
	}
	first, _, _ := strings.Cut(strings.ReplaceAll(string(cmd), "\x00", " "), " ")
	first = path.Base(strings.TrimSuffix(first, ":"))
	return daemonName(first) != "", nil
}
