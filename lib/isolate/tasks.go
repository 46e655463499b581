package isolate

import (
	"bufio"
	"fmt"
	"path"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
)

// checkTasks verifies, on the node itself (cgroup v2), what a confined or
// released cgroup's processes may run on: the first process in its
// cgroup.procs must have a Cpus_allowed_list (/proc/<pid>/status) inside
// the cgroup's cpuset.cpus.effective. A cgroup with no process of its own
// (a slice), a process that exited, or a fixture root is not checked.
func (h *Hierarchy) checkTasks(cg string) error {
	if !h.V2 || !h.root.IsHost() {
		return nil
	}
	eff, err := h.readList(path.Join(h.nodePath(cg), "cpuset.cpus.effective"))
	if err != nil {
		return nil // no cpuset here (not enabled), or the cgroup went
	}
	procs, err := h.root.ReadString(path.Join(h.nodePath(cg), "cgroup.procs"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(procs), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil || pid <= 0 {
		return nil
	}
	allowed, ok := cpusAllowed(h, pid)
	if !ok {
		return nil
	}
	if extra := allowed.Difference(eff); !extra.IsEmpty() {
		return fmt.Errorf("cgroup %s: process %d may still run on CPUs %s (Cpus_allowed_list %s, cpuset.cpus.effective %s)",
			cg, pid, extra, allowed, eff)
	}
	return nil
}

// cpusAllowed reads Cpus_allowed_list of /proc/<pid>/status.
func cpusAllowed(h *Hierarchy, pid int) (cpuset.Set, bool) {
	s, err := h.root.ReadString("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return cpuset.Set{}, false
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			set, err := cpuset.Parse(strings.TrimSpace(v))
			return set, err == nil
		}
	}
	return cpuset.Set{}, false
}
