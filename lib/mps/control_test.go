package mps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/lib/host"
)

var testUUIDs = []string{"GPU-9fcc3d43-eb61-60eb-e001-232f5fac1c5d", "GPU-7fe618e2-4b8c-8aab-475e-f22c59e00e10"}

// shortBase is a fresh base directory with a short path: MPS socket paths
// must fit in 107 bytes, and $TMPDIR may be long.
func shortBase(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "mps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// jobUser is the uid and gid the pipe directory is handed to: another
// user's when the test runs as root, its own otherwise.
func jobUser() (int, int) {
	if os.Geteuid() == 0 {
		return 4242, 4243
	}
	return os.Geteuid(), os.Getegid()
}

// newDaemon makes the directories of a daemon for user alice (Create)
// with the given marker files for the fake.
func newDaemon(t *testing.T, markers ...string) Daemon {
	t.Helper()
	key, err := Key(testUUIDs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Dirs(shortBase(t), "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := jobUser()
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	for _, m := range markers {
		if err := os.WriteFile(filepath.Join(p.Dir, m), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Daemon{UUIDs: testUUIDs, Paths: p, UID: uid}
}

func newExec(t *testing.T) *Exec {
	return &Exec{Bin: fakeBin(t), Proc: host.NewRoot("/"), Timeout: 5 * time.Second}
}

// stopAll kills what a failed test may have left of d's daemon.
func stopAll(t *testing.T, e *Exec, d Daemon) {
	t.Cleanup(func() { e.Quit(context.Background(), d, 0) })
}

// procRuns says whether pid runs and is no zombie.
func procRuns(pid int) bool {
	st, err := readStat(host.NewRoot("/"), pid)
	return err == nil && !st.zombie
}

// TestStartServersQuit: Start runs the daemon with exactly the MPS
// environment and hands the pipe directory to the job's user; Alive finds
// it, a second Start is refused, Servers lists its server, Quit stops both
// cleanly, and afterwards Servers, Quit and Remove find nothing to do.
func TestStartServersQuit(t *testing.T) {
	e := newExec(t)
	d := newDaemon(t, "fake-server")
	stopAll(t, e, d)
	ctx := context.Background()
	pid, err := e.Start(ctx, d)
	if err != nil || pid <= 0 {
		t.Fatalf("Start: %d, %v", pid, err)
	}
	if got, err := e.Alive(d); got != pid || err != nil {
		t.Errorf("Alive = %d, %v; want %d", got, err, pid)
	}
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	want := []string{
		"CUDA_VISIBLE_DEVICES=" + strings.Join(testUUIDs, ","),
		"CUDA_MPS_PIPE_DIRECTORY=" + d.Paths.Pipe,
		"CUDA_MPS_LOG_DIRECTORY=" + d.Paths.Log,
		"PATH=" + filepath.Dir(e.Bin) + ":/usr/sbin:/usr/bin:/sbin:/bin",
	}
	if got := strings.Split(strings.TrimRight(string(env), "\x00"), "\x00"); !slices.Equal(got, want) {
		t.Errorf("daemon environment:\n%q\nwant\n%q", got, want)
	}
	if limits, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits"); !regexp.MustCompile(`Max file size\s+67108864\s+67108864 `).Match(limits) {
		t.Errorf("daemon's limits: want Max file size 67108864 (MaxLogFile):\n%s", limits)
	}
	fi, err := os.Stat(d.Paths.Pipe)
	if st, ok := fi.Sys().(*syscall.Stat_t); err != nil || !ok || int(st.Uid) != os.Geteuid() || fi.Mode()&(os.ModePerm|os.ModeSticky) != 0o710 {
		t.Errorf("pipe directory after Start: %v %v, want this process's, mode 0710 (search for uid %d through its ACL)", fi.Mode(), fi.Sys(), d.UID)
	}
	if _, err := e.Start(ctx, d); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Errorf("second Start: %v; want ErrRunning naming pid %d", err, pid)
	}
	servers, err := e.Servers(ctx, d)
	if err != nil || len(servers) != 1 {
		t.Fatalf("Servers = %v, %v; want one pid", servers, err)
	}
	if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(servers[0]) + "/cmdline"); !strings.HasPrefix(string(cmd), ServerName+"\x00") {
		t.Errorf("server %d runs %q", servers[0], cmd)
	}
	start := time.Now()
	st, err := e.Quit(ctx, d, 5*time.Second)
	if err != nil || st.Daemon != pid || !st.Quit || len(st.Killed) != 0 {
		t.Errorf("Quit = %+v, %v; want daemon %d ended by quit, nothing killed", st, err, pid)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("Quit took %s for a daemon that obeys quit", waited)
	}
	if got, _ := e.Alive(d); got != 0 || procRuns(servers[0]) {
		t.Errorf("after Quit: Alive = %d, server %d runs: %v", got, servers[0], procRuns(servers[0]))
	}
	if _, err := e.Servers(ctx, d); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Servers with no daemon: %v; want ErrNotRunning", err)
	}
	if st, err := e.Quit(ctx, d, time.Second); err != nil || st.Daemon != 0 || st.Quit || st.Killed != nil {
		t.Errorf("Quit with no daemon = %+v, %v; want nothing done", st, err)
	}
	for range 2 {
		if _, err := Remove(d.Paths); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(d.Paths.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Remove: %v", d.Paths.Dir, err)
	}
}

// TestQuitKillsWhatIgnoresQuit: a daemon that ignores quit is killed,
// with its server, once the wait is over, and Quit says so.
func TestQuitKillsWhatIgnoresQuit(t *testing.T) {
	e := newExec(t)
	d := newDaemon(t, "fake-server", "fake-ignore-quit")
	stopAll(t, e, d)
	ctx := context.Background()
	pid, err := e.Start(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := e.Servers(ctx, d)
	if err != nil || len(servers) != 1 {
		t.Fatalf("Servers = %v, %v", servers, err)
	}
	const wait = 300 * time.Millisecond
	start := time.Now()
	st, err := e.Quit(ctx, d, wait)
	took := time.Since(start)
	if err != nil || st.Daemon != pid || st.Quit || !slices.Equal(st.Killed, []int{pid, servers[0]}) {
		t.Errorf("Quit = %+v, %v; want daemon %d and server %d killed, in that order", st, err, pid, servers[0])
	}
	if took < wait || took > wait+killGrace {
		t.Errorf("Quit took %s; want the wait (%s) and at most %s more", took, wait, killGrace)
	}
	if procRuns(pid) || procRuns(servers[0]) {
		t.Errorf("after Quit: daemon runs %v, server runs %v", procRuns(pid), procRuns(servers[0]))
	}
}

// TestQuitKillsOrphanServer: a server whose daemon died is found by its
// environment, as a process of this process's user (of root, on a node),
// and killed.
func TestQuitKillsOrphanServer(t *testing.T) {
	e := newExec(t)
	d := newDaemon(t, "fake-server")
	stopAll(t, e, d)
	ctx := context.Background()
	pid, err := e.Start(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := e.Servers(ctx, d)
	if err != nil || len(servers) != 1 {
		t.Fatalf("Servers = %v, %v", servers, err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; procRuns(pid) && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	st, err := e.Quit(ctx, d, 100*time.Millisecond)
	if err != nil || st.Daemon != 0 || st.Quit || !slices.Equal(st.Killed, servers) {
		t.Errorf("Quit = %+v, %v; want server %v killed", st, err, servers)
	}
	if procRuns(servers[0]) {
		t.Errorf("server %d still runs", servers[0])
	}
}

// TestStartFails: a failing `-d` is one error line with the program's
// words, and no daemon is left.
func TestStartFails(t *testing.T) {
	e := newExec(t)
	d := newDaemon(t, "fake-fail-start")
	_, err := e.Start(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "cannot start the daemon") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Start: %v; want one line with the program's message", err)
	}
	if pid, _ := e.Alive(d); pid != 0 {
		t.Errorf("Alive = %d after a failed Start", pid)
	}
	bad := d
	bad.UUIDs = []string{"0"}
	if _, err := e.Start(context.Background(), bad); err == nil || !strings.Contains(err.Error(), `"0"`) {
		t.Errorf("Start with an index for a UUID: %v", err)
	}
}
