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
// whose /proc/<pid>/exe is a file named slurmd or slurmstepd (or Debian's
// slurmd-wlm, slurmstepd-wlm: daemonName) and whose real
// user (/proc/<pid>/status, Uid:) is root. A user can start a process with
// any name and command line, even a copy of slurmstepd, but not as root, so
// none passes for Slurm's. A process that exits meanwhile, or a kernel
// thread (no exe), is skipped. Any other error (/proc unreadable; a process
// whose exe cannot be read while its /proc/<pid>/comm or command line names
// a Slurm daemon) is returned: then what runs on the node cannot be told.
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
func examine(r host.Root, pid int) (d Daemon, ok bool, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(r.Path(dir + "/exe"))
	if err != nil {
		if host.ProcGone(err) {
			return Daemon{}, false, nil
		}
		// Unreadable (EACCES): it matters only if it may be Slurm's.
		named, nerr := namedLikeDaemon(r, dir)
		switch {
		case nerr != nil && host.ProcGone(nerr):
			return Daemon{}, false, nil
		case nerr != nil:
			return Daemon{}, false, fmt.Errorf("process %d: %w", pid, nerr)
		case named:
			return Daemon{}, false, fmt.Errorf("process %d, named like a Slurm daemon: %w", pid, err)
		}
		return Daemon{}, false, nil
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if daemonName(path.Base(exe)) == "" {
		return Daemon{}, false, nil
	}
	uid, err := r.RealUID(pid)
	if err != nil {
		if host.ProcGone(err) {
			return Daemon{}, false, nil
		}
		return Daemon{}, false, fmt.Errorf("process %d: %w", pid, err)
	}
	if uid != 0 {
		return Daemon{}, false, nil // a user's copy
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
