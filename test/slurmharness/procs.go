package slurmharness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ownerFile, in a cluster's folder while it runs, names the test process
// (pid and start time) that owns the cluster, and pids lists the daemons.
const (
	ownerFile = "owner"
	pidsFile  = "pids"
)

// procStart is the start time of a process in clock ticks since boot (field
// 22 of /proc/PID/stat), to tell a live owner from a reused pid.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The command name (field 2) may contain spaces: skip past its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

func writeOwner(dir string) error {
	st, _ := procStart(os.Getpid())
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), st)), 0o644)
}

func appendPID(dir, name string, pid int) error {
	f, err := os.OpenFile(filepath.Join(dir, pidsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s %d\n", name, pid)
	return err
}

// ownerAlive says whether the process named in dir/owner still runs.
func ownerAlive(dir string) (alive, known bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false, true
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return false, true
	}
	st, ok := procStart(pid)
	return ok && st == f[1], true
}

// sweepStale stops the daemons of clusters whose test process died without
// cleaning up (killed, or go test -timeout). Only processes whose command
// line or environment names that cluster's folder are touched.
func sweepStale(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "slurmh-*"))
	for _, dir := range dirs {
		alive, known := ownerAlive(dir)
		if !known || alive {
			continue
		}
		n := killLeftovers(filepath.Join(dir, "slurm.conf"), dir)
		os.Remove(filepath.Join(dir, ownerFile))
		if n > 0 {
			t.Logf("slurmharness: stopped %d process(es) left by a dead test in %s", n, dir)
		}
	}
}

// killLeftovers SIGKILLs every process (other than this one) whose
// environment has SLURM_CONF=conf (slurmd and slurmctld children, steps,
// tasks, prolog/epilog) or whose command line names dir (the daemons,
// munged). It returns how many it killed.
func killLeftovers(conf, dir string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	envMark := []byte("SLURM_CONF=" + conf + "\x00")
	self := os.Getpid()
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		match := false
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(append(env, 0), envMark) {
			match = true
		}
		if !match {
			if cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Contains(cl, []byte(dir+"/")) {
				match = true
			}
		}
		if match {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}
