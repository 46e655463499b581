package bind

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// getAffinity is sched_getaffinity(2) of the calling thread.
var getAffinity = func() (cpuset.Set, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return cpuset.Set{}, err
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpuset.New(cpus...), nil
}

// TaskCPUs reads the calling thread's affinity (sched_getaffinity) and the
// CPUs the job may use on this node: the effective cpuset of the process's
// cgroup, from /proc/self/cgroup, then cpuset.cpus.effective (cgroup v2) or
// the cpuset controller's cpuset.effective_cpus (v1; cpuset.cpus on old
// kernels), walking up to the nearest cgroup that has the file. Files are
// read through r. A job cpuset that cannot be found is empty (unknown),
// not an error.
func TaskCPUs(r host.Root) (allowed, job cpuset.Set, err error) {
	if allowed, err = getAffinity(); err != nil {
		return cpuset.Set{}, cpuset.Set{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	job, err = cgroupCPUs(r)
	return allowed, job, err
}

// maxCgroupFile bounds each cgroup file TaskCPUs reads: /proc/self/cgroup
// is a few lines, a cpuset list of 4096 CPUs at most some tens of KiB.
// Inside a container the files are whatever its mounts put there: one
// that is larger, or not a regular file (a FIFO would block the rank), is
// not read and counts as absent.
const maxCgroupFile = 64 << 10

// readCgroupFile reads a cgroup or procfs file through r, bounded and
// without blocking (host.ReadRegular).
func readCgroupFile(r host.Root, p string) (string, error) {
	b, _, err := host.ReadRegular(r.Path(p), maxCgroupFile)
	return strings.Trim(string(b), " \t\r\n\x00"), err
}

// cgroupCPUs reads the effective cpuset of the process's cgroup.
func cgroupCPUs(r host.Root) (cpuset.Set, error) {
	b, err := readCgroupFile(r, "/proc/self/cgroup")
	if err != nil {
		return cpuset.Set{}, nil // no procfs (or not Linux): unknown
	}
	for _, line := range strings.Split(b, "\n") {
		// hierarchy-ID:controller-list:path
		id, rest, ok := strings.Cut(line, ":")
		ctrls, cg, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			continue
		}
		var dir string
		var files []string
		switch {
		case id == "0" && ctrls == "":
			dir, files = "/sys/fs/cgroup", []string{"cpuset.cpus.effective"}
		case slices.Contains(strings.Split(ctrls, ","), "cpuset"):
			dir, files = "/sys/fs/cgroup/"+ctrls, []string{"cpuset.effective_cpus", "cpuset.cpus"}
			if !r.Exists(dir) {
				dir = "/sys/fs/cgroup/cpuset"
			}
		default:
			continue
		}
		if s, ok, err := readUp(r, dir, path.Clean("/"+cg), files); ok || err != nil {
			return s, err
		}
	}
	return cpuset.Set{}, nil
}

// readUp reads the first of files found in dir+cg or the nearest cgroup
// above it.
func readUp(r host.Root, dir, cg string, files []string) (cpuset.Set, bool, error) {
	for {
		for _, f := range files {
			p := path.Join(dir, cg, f)
			s, err := readCgroupFile(r, p)
			if err != nil {
				continue
			}
			if strings.TrimSpace(s) == "" {
				continue // v1 cpuset.cpus of a cgroup that inherits nothing
			}
			set, err := cpuset.Parse(s)
			if err != nil {
				return cpuset.Set{}, false, fmt.Errorf("%s: %w", p, err)
			}
			return set, true, nil
		}
		if cg == "/" {
			return cpuset.Set{}, false, nil
		}
		cg = path.Dir(cg)
	}
}
