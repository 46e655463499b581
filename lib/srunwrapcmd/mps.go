package srunwrapcmd

import (
	"errors"
	"fmt"
	"strings"

	"gpuprep/lib/bind"
	"gpuprep/lib/mps"
	"gpuprep/lib/srunconf"
)

// envVar is one variable srunwrap sets.
type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// mpsPlan is what srunwrap does about MPS for one rank: the variables it
// sets (none when no daemon serves the rank, or when the user chose for
// themselves) and one line saying what and why.
type mpsPlan struct {
	Set []envVar `json:"set"`
	Why string   `json:"why"`
	// Warn: Why is a problem with the daemon's directories that the rank
	// should print (not just "no daemon").
	Warn bool `json:"warn,omitempty"`
}

// jobUser is the job's user as Slurm names it to the task
// (SLURM_JOB_USER), else the login's (USER, LOGNAME) outside Slurm.
func jobUser(getenv func(string) string) string {
	for _, v := range []string{"SLURM_JOB_USER", "USER", "LOGNAME"} {
		if u := getenv(v); u != "" {
			return u
		}
	}
	return ""
}

// planMPS decides rank p's MPS variables. gpuprep-prolog starts one MPS
// control daemon per job GPU (or MIG device) for the job's user, under
// /run/gpuprep/mps (lib/mps); a rank uses it when it serves exactly the
// devices the rank sees (bind.RankUUIDs, mps.Lookup: the pipe directory
// is this process's user's, with the daemon's socket in it). Then
// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY point at it, and
// CUDA_VISIBLE_DEVICES names the devices by UUID: an MPS client numbers
// GPUs from the daemon's, so an index other than 0 would name none. A
// CUDA_MPS_PIPE_DIRECTORY the user set wins: nothing is set over it (nor
// CUDA_MPS_LOG_DIRECTORY over theirs). visible is the rank's
// CUDA_VISIBLE_DEVICES as srunwrap leaves it otherwise. brief skips what
// only the explanation needs (a multi-GPU rank's per-GPU daemons).
func (in *inputs) planMPS(bi bind.Input, p bind.Plan, getenv func(string) string, visible string, brief bool) mpsPlan {
	if v := getenv(mps.PipeEnv); v != "" {
		return mpsPlan{Why: fmt.Sprintf("kept your %s=%s: srunwrap sets no MPS variable over yours", mps.PipeEnv, srunconf.Show(v))}
	}
	uuids, err := bind.RankUUIDs(bi, p)
	if err != nil {
		return mpsPlan{Why: "no MPS: " + srunconf.Clip(err.Error(), msgMax)}
	}
	user := jobUser(getenv)
	if user == "" {
		return mpsPlan{Why: "no MPS: the job's user is unknown (SLURM_JOB_USER and USER are unset)"}
	}
	paths, err := mps.Lookup(in.root, mps.DefaultBase, user, in.uid, uuids)
	if errors.Is(err, mps.ErrNoDaemon) {
		return mpsPlan{Why: in.noDaemon(user, uuids, brief)}
	}
	if err != nil {
		return mpsPlan{Why: "no MPS: " + srunconf.Clip(strings.TrimPrefix(err.Error(), "mps: "), msgMax), Warn: true}
	}
	m := mpsPlan{Set: []envVar{{mps.PipeEnv, paths.Pipe}}}
	var why strings.Builder
	fmt.Fprintf(&why, "%s=%s", mps.PipeEnv, paths.Pipe)
	if v := getenv(mps.LogEnv); v != "" {
		fmt.Fprintf(&why, ", kept your %s=%s", mps.LogEnv, srunconf.ShowN(v, summaryMax))
	} else {
		m.Set = append(m.Set, envVar{mps.LogEnv, paths.Log})
		fmt.Fprintf(&why, ", %s=%s", mps.LogEnv, paths.Log)
	}
	fmt.Fprintf(&why, ": the MPS daemon gpuprep-prolog started for %s on %s %s", user, gpuWord(uuids), strings.Join(uuids, ","))
	if byUUID := strings.Join(uuids, ","); visible != byUUID {
		m.Set = append(m.Set, envVar{mps.DevicesEnv, byUUID})
		fmt.Fprintf(&why, "; %s=%s by UUID (MPS clients number GPUs from the daemon's)", mps.DevicesEnv, byUUID)
	}
	m.Why = why.String()
	return m
}

// noDaemon says why no daemon of user serves the devices uuids. A rank
// that sees several GPUs may have a daemon on each, which it cannot use:
// a client of one daemon sees only that daemon's GPU.
func (in *inputs) noDaemon(user string, uuids []string, brief bool) string {
	if len(uuids) > 1 && !brief {
		var each []string
		for _, u := range uuids {
			if _, err := mps.Lookup(in.root, mps.DefaultBase, user, in.uid, []string{u}); err == nil {
				each = append(each, u)
			}
		}
		if len(each) > 0 {
			return fmt.Sprintf("no MPS: the rank sees %d GPUs and your MPS daemons serve one GPU each (%s); "+
				"a client of one would see only its GPU. Give each rank one GPU (as many ranks as GPUs, srunwrap.gpu = \"narrow\")",
				len(uuids), strings.Join(each, ","))
		}
	}
	return fmt.Sprintf("no MPS daemon for you on %s %s: the job did not ask for MPS, or another user's daemon serves it",
		gpuWord(uuids), strings.Join(uuids, ","))
}

// gpuWord is "GPU" or "GPUs"; "MIG device" for one MIG device.
func gpuWord(uuids []string) string {
	switch {
	case len(uuids) > 1:
		return "GPUs"
	case strings.HasPrefix(uuids[0], "MIG-"):
		return "MIG device"
	}
	return "GPU"
}

// apply sets m's variables in env.
func (m mpsPlan) apply(env *envList) {
	for _, v := range m.Set {
		env.set(v.Name, v.Value)
	}
}
