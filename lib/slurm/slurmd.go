package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// hostnameFile is the node's host name (a node path).
const hostnameFile = "/proc/sys/kernel/hostname"

// maxPidFile bounds a pid file read.
const maxPidFile = 64

// SlurmdPidFileFor is the file this node's slurmd writes its pid to:
// SlurmdPidFile= of the slurm.conf LocateConf finds (slurmConfEnv is
// SLURM_CONF's value, "" when unset), with %n the node's name (node, from
// SLURMD_NODENAME; the short host name when "") and %h the host name
// (/proc/sys/kernel/hostname). Without a readable slurm.conf it is
// DefaultSlurmdPidFile, and err says why, for the log.
func SlurmdPidFileFor(r host.Root, slurmConfEnv, node string) (file string, err error) {
	hostname, _ := r.ReadString(hostnameFile)
	if node == "" {
		node, _, _ = strings.Cut(hostname, ".")
	}
	conf, err := LocateConf(r, slurmConfEnv)
	if err != nil {
		return DefaultSlurmdPidFile, err
	}
	c, err := ReadConf(r, conf)
	if err != nil {
		return DefaultSlurmdPidFile, err
	}
	return c.SlurmdPidFile(node, hostname), nil
}

// FindSlurmd lists the node's slurmd processes from what ScanDaemons found
// (daemons): the one whose pid pidFile holds (read under r) first, then
// every other (several slurmd per host, each with its own pid file). A pid
// file naming no root slurmd (an exited or reused pid) is stale and passed
// over. note says what was made of the pid file, for messages.
func FindSlurmd(r host.Root, pidFile string, daemons *Daemons) (found []Daemon, note string) {
	var all []Daemon
	if daemons != nil {
		all = daemons.Slurmd
	}
	pid, err := readPidFile(r, pidFile)
	if err != nil {
		return all, err.Error()
	}
	i := slices.IndexFunc(all, func(d Daemon) bool { return d.PID == pid })
	if i < 0 {
		return all, fmt.Sprintf("%s: process %d is not a root slurmd (a stale file)", pidFile, pid)
	}
	found = append(found, all[i])
	found = append(found, slices.Delete(slices.Clone(all), i, i+1)...)
	return found, fmt.Sprintf("%s: slurmd %d", pidFile, pid)
}

// readPidFile reads a pid file: one positive decimal number.
func readPidFile(r host.Root, file string) (int, error) {
	b, _, err := host.ReadRegular(r.Path(file), maxPidFile)
	if err != nil {
		return 0, fmt.Errorf("slurmd pid file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("slurmd pid file %s: %q is not a process id", file, textfmt.Clip(s, 40))
	}
	return pid, nil
}
