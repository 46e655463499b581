package slurm

import (
	"errors"
	"fmt"

	"gpuprep/lib/host"
)

// Layout is where Slurm runs on a node: its daemons, told from their
// processes, and its cgroups, found at any depth. What must never be
// confined (lib/isolate) is read off it.
type Layout struct {
	// Slurmd are the node's slurmd processes: at least one.
	Slurmd []Daemon
	// Stepd are its slurmstepd processes (job steps, and slurmd's
	// "slurmstepd infinity").
	Stepd []Daemon
	// PidFile is the SlurmdPidFile looked at, and PidNote what it held
	// ("/run/slurmd.pid: slurmd 812"), for messages.
	PidFile, PidNote string
	// Cgroups are Slurm's scopes, v1 trees and job cgroups.
	Cgroups *JobCgroups
}

// ErrNoSlurmd says that no slurmd process was found on the node.
var ErrNoSlurmd = errors.New("no slurmd process found")

// FindLayout finds Slurm's layout on the node: slurmd's pid from its pid
// file (SlurmdPidFileFor: slurmConfEnv is SLURM_CONF's value, node
// SLURMD_NODENAME) and every slurmd and slurmstepd in /proc (ScanDaemons),
// then Slurm's cgroups where those daemons place them (FindJobCgroups). An
// error says the layout cannot be told: no slurmd found (ErrNoSlurmd),
// /proc or the cgroup tree unreadable, or too large to search.
func FindLayout(r host.Root, slurmConfEnv, node string) (*Layout, error) {
	l := &Layout{}
	var confErr error
	l.PidFile, confErr = SlurmdPidFileFor(r, slurmConfEnv, node)
	d, err := ScanDaemons(r)
	if err != nil {
		return nil, err
	}
	l.Stepd = d.Stepd
	l.Slurmd, l.PidNote = FindSlurmd(r, l.PidFile, d)
	if len(l.Slurmd) == 0 {
		why := l.PidNote
		if confErr != nil {
			why += " (slurm.conf: " + confErr.Error() + ")"
		}
		return nil, fmt.Errorf("%w: %s; no root process in /proc runs a file named %s", ErrNoSlurmd, why, SlurmdName)
	}
	if l.Cgroups, err = FindJobCgroups(r, d); err != nil {
		return nil, err
	}
	return l, nil
}
