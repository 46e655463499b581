package mps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/host"
)

// addProc gives the fixture root a process (fakeproc.Add) of this
// process's user in slurmd's cgroup with an environment (NUL-separated)
// and a stat line: state, parent, start time.
func addProc(t *testing.T, dir string, pid int, exe, cmdline string, env []string, state string, ppid int) {
	t.Helper()
	addProcOf(t, dir, pid, os.Geteuid(), "/system.slice/slurmd.service", exe, cmdline, env, state, ppid)
}

// addProcOf is addProc for a process of uid in cgroup.
func addProcOf(t *testing.T, dir string, pid, uid int, cgroup, exe, cmdline string, env []string, state string, ppid int) {
	t.Helper()
	fakeproc.Add(t, dir, pid, uid, exe, cmdline, "0::"+cgroup+"\n")
	proc := filepath.Join(dir, "proc", fmt.Sprint(pid))
	environ := ""
	for _, kv := range env {
		environ += kv + "\x00"
	}
	stat := fmt.Sprintf("%d (%s) %s %d %s 4242 0 0\n", pid, filepath.Base(exe), state, ppid, strings.Repeat("0 ", 17))
	if state == "Z" {
		os.WriteFile(filepath.Join(proc, "cmdline"), nil, 0o644)
		environ = ""
	}
	for name, c := range map[string]string{"environ": environ, "stat": stat} {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScanFakeProc: the daemon of a pipe directory is the
// nvidia-cuda-mps-control run with -d (or -f) whose environment names it;
// its servers are those whose parent it is, or, once it is gone, those
// whose environment names it in the launcher's cgroup. Clients, the
// control program run as a client, other pipes' daemons and servers,
// zombies, and a user's look-alikes (a daemon not run by this process's
// user, a server elsewhere than the launcher's cgroup) are not.
func TestScanFakeProc(t *testing.T) {
	dir := t.TempDir()
	pipe := "/run/gpuprep/mps/alice-0123456789ab/pipe"
	other := "/run/gpuprep/mps/bob-0123456789ab/pipe"
	env := func(p string) []string {
		return []string{"CUDA_VISIBLE_DEVICES=" + testUUIDs[0], PipeEnv + "=" + p, "PATH=/usr/bin"}
	}
	ctl := "/usr/bin/nvidia-cuda-mps-control"
	srv := "/usr/bin/nvidia-cuda-mps-server"
	addProc(t, dir, 100, ctl, ctl+" -d", env(pipe), "S", 1)
	addProc(t, dir, 101, srv, "nvidia-cuda-mps-server", env(pipe), "S", 100)
	addProc(t, dir, 102, srv, "nvidia-cuda-mps-server", nil, "S", 100)
	addProc(t, dir, 103, ctl, ctl, env(pipe), "S", 50)
	addProc(t, dir, 104, ctl, "/usr/local/cuda/bin/nvidia-cuda-mps-control -f", env(other), "S", 1)
	addProc(t, dir, 105, "/usr/bin/python3", "python3 train.py", env(pipe), "S", 60)
	addProc(t, dir, 106, ctl, ctl+" -d", env(pipe), "Z", 1)
	addProc(t, dir, 107, srv, "nvidia-cuda-mps-server", nil, "S", 104)
	addProc(t, dir, 108, srv, "nvidia-cuda-mps-server", env(other), "S", 104)
	unit := "/system.slice/gpuprep-mps-alice-0123456789ab.service"
	user := "/user.slice/user-1000.slice/session-1.scope"
	addProcOf(t, dir, 109, os.Geteuid()+1000, user, "/home/u/"+ControlName, ControlName+" -f", env(pipe), "S", 1)
	addProcOf(t, dir, 110, os.Geteuid()+1000, user, "/home/u/"+ServerName, ServerName, env(pipe), "S", 1)
	addProcOf(t, dir, 111, os.Geteuid()+1000, unit, srv, ServerName, env(pipe), "S", 1)

	r := host.NewRoot(dir)
	ps, err := scan(r, pipe, unit)
	if err != nil {
		t.Fatal(err)
	}
	pids := func(xs []proc) []int {
		var out []int
		for _, x := range xs {
			out = append(out, x.pid)
		}
		return out
	}
	if got := pids(ps.daemons); !slices.Equal(got, []int{100}) {
		t.Errorf("daemons %v; want [100]", got)
	}
	if got := pids(ps.servers); !slices.Equal(got, []int{101, 102, 111}) {
		t.Errorf("servers %v; want [101 102 111]", got)
	}
	if ps, _ := scan(r, pipe, ""); !slices.Equal(pids(ps.servers), []int{101, 102}) {
		t.Errorf("servers with no launcher's cgroup %v; want [101 102]", pids(ps.servers))
	}
	if ps.daemons[0].start != 4242 {
		t.Errorf("start time %d; want 4242", ps.daemons[0].start)
	}
	e := &Exec{Bin: "/nonexistent/" + ControlName, Proc: r, Timeout: time.Second}
	if pid, err := e.Alive(Daemon{Paths: Paths{Pipe: pipe}}); pid != 100 || err != nil {
		t.Errorf("Alive = %d, %v; want 100", pid, err)
	}
	if pid, err := e.Alive(Daemon{Paths: Paths{Pipe: other}}); pid != 104 || err != nil {
		t.Errorf("Alive(other) = %d, %v; want 104", pid, err)
	}
	if pid, err := e.Alive(Daemon{Paths: Paths{Pipe: "/run/gpuprep/mps/nobody-0123456789ab/pipe"}}); pid != 0 || err != nil {
		t.Errorf("Alive(none) = %d, %v; want 0", pid, err)
	}
	// Quit on a fixture finds the processes but signals none of them:
	// their pids are the fixture's, not this machine's.
	st, err := e.Quit(context.Background(), Daemon{Paths: Paths{Pipe: pipe}}, 0)
	if err == nil || !strings.Contains(err.Error(), "fixture") || st.Daemon != 100 || st.Killed != nil {
		t.Errorf("Quit on a fixture = %+v, %v; want a refusal naming the fixture", st, err)
	}
}
