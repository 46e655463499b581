package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// On cgroup v1 systemd does not manage the cpuset hierarchy: host processes
// sit in its root cgroup, which cannot be limited (it is every CPU by
// definition). So the pseudo-cgroup "." stands for them: confining it
// moves the root cgroup's host processes into a cgroup of gpuprep's own,
// gpuprep.housekeeping, limited to the housekeeping CPUs; putting it back
// moves them (and whatever they started meanwhile) back to the root and
// removes that cgroup. Kernel threads stay (their affinity is the
// kernel's business), and so do slurmd and slurmstepd, which Slurm places
// itself (CpuSpecList), and processes whose command name matches
// [isolation] exclude.

// rootTasks is the pseudo-cgroup of the v1 root cpuset's host processes.
const rootTasks = "."

// hkCgroup is gpuprep's own v1 cpuset cgroup for them.
const hkCgroup = "gpuprep.housekeeping"

// pfKthread is PF_KTHREAD in /proc/<pid>/stat's flags (include/linux/sched.h).
const pfKthread = 0x00200000

// readRootTasks is ReadCPUs(".") on v1: gpuprep.housekeeping's CPUs while
// it exists, else the root's.
func (h *Hierarchy) readRootTasks() (string, error) {
	if h.root.Exists(h.nodePath(hkCgroup)) {
		return h.ReadCPUs(hkCgroup)
	}
	return h.ReadCPUs("")
}

// writeRootTasks is WriteCPUs(".", cpus) on v1.
func (h *Hierarchy) writeRootTasks(cpus string, exclude []string) error {
	all, err := h.ReadCPUs("")
	if err != nil {
		return err
	}
	if cpus == "" || cpus == all {
		return h.releaseRootTasks()
	}
	mems, err := h.root.ReadString(path.Join(h.mount, "cpuset.mems"))
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	// The Writer creates the cgroup and writes cpus and mems (a v1 cpuset
	// cgroup takes no process before both are set).
	w, err := h.writer()
	if err != nil {
		return err
	}
	crashpoint.Hit("cgroup-set", hkCgroup)
	if err := w.SetV1(h.root.Path(path.Dir(h.mount)), hkCgroup, cpus, mems); err != nil {
		return err
	}
	pids, err := h.procs("")
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if !h.movable(pid, exclude) {
			continue
		}
		if err := h.addProc(hkCgroup, pid); err != nil {
			return err
		}
	}
	return nil
}

// releaseRootTasks moves every process of gpuprep.housekeeping back to
// the root cpuset and removes it. Processes that exit meanwhile are no
// error; the removal is retried while processes started during the move
// turn up, and left (with its CPUs set to the root's) when the folder
// cannot go (a fixture tree is plain files).
func (h *Hierarchy) releaseRootTasks() error {
	if !h.root.Exists(h.nodePath(hkCgroup)) {
		return nil
	}
	var prev []int
	for i := range 5 {
		pids, err := h.procs(hkCgroup)
		if err != nil {
			return err
		}
		if i > 0 && slices.Equal(pids, prev) {
			break // none moved: a fixture's plain file, or stuck
		}
		for _, pid := range pids {
			if err := h.addProc("", pid); err != nil {
				return err
			}
		}
		crashpoint.Hit("cgroup-rmdir", hkCgroup)
		if err := os.Remove(h.root.Path(h.nodePath(hkCgroup))); err == nil {
			return nil
		}
		prev = pids
	}
	all, err := h.ReadCPUs("")
	if err != nil {
		return err
	}
	return h.writeV1(hkCgroup, all)
}

// procs lists the process ids in <cgroup>/cgroup.procs.
func (h *Hierarchy) procs(cg string) ([]int, error) {
	p := path.Join(h.nodePath(cg), "cgroup.procs")
	s, err := h.root.ReadString(p)
	if errors.Is(err, fs.ErrNotExist) && cg != "" && h.root.Exists(h.nodePath(cg)) {
		return nil, nil // a fixture's new cgroup: no process yet
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var out []int
	for _, f := range strings.Fields(s) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("%s: unexpected content %q (want process ids)", p, f)
		}
		out = append(out, pid)
	}
	return out, nil
}

// addProc moves a process into a cgroup: its id appended to
// <cgroup>/cgroup.procs (the kernel moves it on each write; a plain file
// of a fixture collects the ids). One that exited is no error.
func (h *Hierarchy) addProc(cg string, pid int) error {
	p := h.root.Path(path.Join(h.nodePath(cg), "cgroup.procs"))
	// O_CREATE for a fixture's new cgroup; a kernel's always has the file.
	crashpoint.Hit("cgroup-procs", p)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", cg, err)
	}
	_, werr := f.WriteString(strconv.Itoa(pid) + "\n")
	cerr := f.Close()
	if errors.Is(werr, unix.ESRCH) {
		return nil
	}
	if werr != nil {
		return fmt.Errorf("cgroup %s: move process %d: %w", cg, pid, werr)
	}
	return cerr
}

// movable says whether a root-cpuset process is a host process to move:
// not a kernel thread (PF_KTHREAD in /proc/<pid>/stat), not slurmd or
// slurmstepd, not excluded by command name. One that exited is not.
func (h *Hierarchy) movable(pid int, exclude []string) bool {
	s, err := h.root.ReadString("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ...; comm may
	// hold spaces and parentheses, so split at the last ')'.
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return false
	}
	comm := s[open+1 : close]
	fields := strings.Fields(s[close+1:])
	if len(fields) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	if err != nil || flags&pfKthread != 0 {
		return false
	}
	return comm != "slurmd" && comm != "slurmstepd" && !excluded(comm, exclude)
}
