package host

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// PIDs lists the processes under r's /proc: its entries whose names are
// positive decimal numbers written canonically ("42", not "042"), in
// ascending order. The callers that scan /proc (Slurm's daemons,
// node_exporter, irqbalance, MPS) read each process's files with
// ProcPath and skip the ones ProcGone says exited meanwhile.
func (r Root) PIDs() ([]int, error) {
	names, err := r.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 || n != strconv.Itoa(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// ProcPath is the node path of a file of process pid: "/proc/<pid>/<name>".
func ProcPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// ProcGone says whether err, from reading a /proc/<pid> file, means the
// process exited meanwhile (or is a kernel thread without that file).
func ProcGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// RealUID reads the real user id of process pid from /proc/<pid>/status
// ("Uid:\t0\t0\t0\t0": real, effective, saved, filesystem). The real one:
// slurmstepd takes the job user's effective id for a while when it opens
// the job's files.
func (r Root) RealUID(pid int) (int, error) {
	file := ProcPath(pid, "status")
	s, err := r.ReadString(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			uid, err := strconv.Atoi(f[0])
			if err != nil {
				break
			}
			return uid, nil
		}
	}
	return 0, fmt.Errorf("%s: no Uid: line", r.Path(file))
}

// ProcCgroups reads a process's cgroups from file, /proc/<pid>/cgroup
// (or /proc/self/cgroup): "<id>:<controllers>:<path>" lines, by
// controller; cgroup v2's "0::<path>" is under "". Garbage is an error
// naming the file and line.
func (r Root) ProcCgroups(file string) (map[string]string, error) {
	s, err := r.ReadString(file)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return nil, fmt.Errorf("%s:%d: %q is not <id>:<controllers>:<path>", file, i+1, clip(line))
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out[c] = parts[2]
			}
		}
	}
	return out, nil
}
