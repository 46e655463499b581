package mps

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/host"
)

// PipeEnv and LogEnv are the variables that place a daemon's pipes and
// logs; DevicesEnv chooses its GPUs.
const (
	PipeEnv    = "CUDA_MPS_PIPE_DIRECTORY"
	LogEnv     = "CUDA_MPS_LOG_DIRECTORY"
	DevicesEnv = "CUDA_VISIBLE_DEVICES"
)

// kind tells a control daemon from an MPS server.
type kind int

const (
	notMPS kind = iota
	daemonProc
	serverProc
)

// proc is a process as long as it lives: its pid and its start time
// (/proc/<pid>/stat field 22), which a reused pid does not share.
type proc struct {
	pid   int
	start uint64
}

// procs are the MPS processes of one pipe directory, by pid, ascending.
type procs struct {
	daemons []proc
	servers []proc
}

// scan walks /proc under r for the processes of the daemon whose pipe
// directory is pipe. A user may give a process of theirs any name,
// arguments and environment, so those alone make nothing gpuprep's:
//   - a control daemon is nvidia-cuda-mps-control run with -d or -f (so
//     not a client like Servers' own) whose environment
//     (/proc/<pid>/environ) sets CUDA_MPS_PIPE_DIRECTORY=pipe and whose
//     real user (/proc/<pid>/status Uid:) is this process's (root's: the
//     prolog started it, and no user can start a process as root);
//   - a server is nvidia-cuda-mps-server whose parent (/proc/<pid>/stat
//     field 4) is one of those daemons, or, once its daemon is gone,
//     whose environment names pipe and that runs as root or in cgroup
//     (/proc/<pid>/cgroup, the v2 line), the one the launcher runs the
//     daemon in, where no user can move a process; cgroup "" is none.
//
// A process that is gone, a zombie (empty cmdline) or unreadable
// (another user's environ to a non-root caller) is not one of them.
func scan(r host.Root, pipe, cgroup string) (procs, error) {
	pids, err := r.PIDs()
	if err != nil {
		return procs{}, err
	}
	var ps procs
	var others []proc // servers of other pipes, or with none in the environment
	for _, pid := range pids {
		k, ok := match(r, pid, pipe)
		if k == notMPS {
			continue
		}
		st, err := readStat(r, pid)
		if err != nil || st.zombie {
			continue
		}
		p := proc{pid, st.start}
		switch {
		case k == daemonProc && ok && startedByUs(r, pid):
			ps.daemons = append(ps.daemons, p)
		case k == serverProc && ok && (startedByUs(r, pid) || cgroup != "" && inCgroup(r, pid, cgroup)):
			ps.servers = append(ps.servers, p)
		case k == serverProc:
			others = append(others, p)
		}
	}
	for _, p := range others {
		st, err := readStat(r, p.pid)
		if err == nil && slices.ContainsFunc(ps.daemons, func(d proc) bool { return d.pid == st.ppid }) {
			ps.servers = append(ps.servers, p)
		}
	}
	byPid := func(a, b proc) int { return a.pid - b.pid }
	slices.SortFunc(ps.daemons, byPid)
	slices.SortFunc(ps.servers, byPid)
	return ps, nil
}

// startedByUs says whether pid's real user is this process's effective
// one: root's, for the daemons the prolog starts.
func startedByUs(r host.Root, pid int) bool {
	uid, err := r.RealUID(pid)
	return err == nil && uid == os.Geteuid()
}

// inCgroup says whether pid's cgroup v2 path is cgroup.
func inCgroup(r host.Root, pid int, cgroup string) bool {
	cgs, err := r.ProcCgroups(host.ProcPath(pid, "cgroup"))
	return err == nil && cgs[""] == cgroup
}

// match reads pid's cmdline and says which MPS program it is, and, for
// one, whether its environment names pipe as its pipe directory.
func match(r host.Root, pid int, pipe string) (kind, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	cmd, err := r.ReadFile(dir + "/cmdline")
	if err != nil || len(cmd) == 0 {
		return notMPS, false
	}
	argv := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	k := notMPS
	switch path.Base(argv[0]) {
	case ControlName:
		for _, a := range argv[1:] {
			if a == "-d" || a == "-f" || a == "--daemon" || a == "--foreground" {
				k = daemonProc
			}
		}
	case ServerName:
		k = serverProc
	}
	if k == notMPS {
		return notMPS, false
	}
	env, err := r.ReadFile(dir + "/environ")
	if err != nil {
		return k, false
	}
	want := []byte(PipeEnv + "=" + pipe)
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return k, true
		}
	}
	return k, false
}

// stat is what /proc/<pid>/stat tells about a process.
type stat struct {
	zombie bool   // state Z or X: exited, not yet reaped
	ppid   int    // field 4
	start  uint64 // field 22, clock ticks after boot
}

// readStat reads /proc/<pid>/stat. The command name (field 2) may hold
// blanks and parentheses, so the fields are counted after its last ")".
func readStat(r host.Root, pid int) (stat, error) {
	file := "/proc/" + strconv.Itoa(pid) + "/stat"
	s, err := r.ReadString(file)
	if err != nil {
		return stat{}, err
	}
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 20 {
		return stat{}, fmt.Errorf("%s: unexpected content", file)
	}
	pp, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return stat{}, fmt.Errorf("%s: unexpected content", file)
	}
	return stat{zombie: f[0] == "Z" || f[0] == "X", ppid: pp, start: start}, nil
}

// running says whether p still runs: the same pid with the same start
// time, not a zombie.
func running(r host.Root, p proc) bool {
	st, err := readStat(r, p.pid)
	return err == nil && !st.zombie && st.start == p.start
}
