package mpssim

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain runs the simulator when started under its names, the tests
// otherwise, as a child subreaper that reaps the daemons the tests leave
// (they leave their -d parent) once the tests are done.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case ControlName, ServerName:
		os.Exit(Main(os.Args, os.Getenv))
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	code := m.Run()
	for {
		if pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); pid <= 0 || err != nil {
			break
		}
	}
	os.Exit(code)
}

// node is a daemon's directories under a short base (socket paths hold
// at most 107 bytes) and the simulator, the test binary linked as
// nvidia-cuda-mps-control alone: the server it starts is itself.
type node struct {
	t               *testing.T
	bin, dir, pipe  string
	logDir, lifeEnv string
}

func newNode(t *testing.T, markers ...string) *node {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	n := &node{t: t, dir: base, pipe: base + "/pipe", logDir: base + "/log", lifeEnv: "60s"}
	for _, d := range []string{n.pipe, n.logDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range markers {
		if err := os.WriteFile(filepath.Join(base, m), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n.bin = filepath.Join(t.TempDir(), ControlName)
	if err := os.Symlink(self, n.bin); err != nil {
		t.Fatal(err)
	}
	return n
}

// run runs the simulator with args and stdin and returns what it printed
// and its exit status.
func (n *node) run(stdin string, args ...string) (string, int) {
	n.t.Helper()
	cmd := exec.Command(n.bin, args...)
	cmd.Env = []string{PipeEnv + "=" + n.pipe, LogEnv + "=" + n.logDir, LifeEnv + "=" + n.lifeEnv}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		n.t.Fatalf("%s %v: %v", n.bin, args, err)
	}
	return string(out), 0
}

// daemonPID is the pid the daemon wrote to its pid file.
func (n *node) daemonPID() int {
	n.t.Helper()
	b, err := os.ReadFile(n.pipe + "/nvidia-cuda-mps-control.pid")
	pid, _ := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		n.t.Fatalf("pid file: %q, %v", b, err)
	}
	return pid
}

// stop kills what a test leaves of the daemon or server pid, and reaps
// it when it is this process's child (a daemon whose -d parent exited).
func (n *node) stop(pid int) {
	n.t.Cleanup(func() {
		if unix.Kill(pid, unix.SIGKILL) == nil {
			unix.Wait4(pid, nil, 0, nil)
		}
	})
}

// gone waits up to 2 s for pid to exit (gone or a zombie).
func gone(pid int) bool {
	for range 200 {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := bytes.LastIndexByte(st, ')'); err != nil || i > 0 && len(st) > i+2 && (st[i+2] == 'Z' || st[i+2] == 'X') {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}

// TestDaemonClientQuit: -d returns once the socket exists, with the
// daemon in its pid file and running -f; the client's get_server_list
// names the server (started as nvidia-cuda-mps-server, this program
// itself when none is next to it); quit stops both, removes the socket and
// the pid file, and the log has the commands; a client then finds no
// daemon.
func TestDaemonClientQuit(t *testing.T) {
	n := newNode(t, MarkerServer)
	if out, rc := n.run("", "-d"); rc != 0 {
		t.Fatalf("-d: exit %d: %s", rc, out)
	}
	if _, err := os.Stat(n.pipe + "/control"); err != nil {
		t.Fatalf("no control socket after -d: %v", err)
	}
	pid := n.daemonPID()
	n.stop(pid)
	if got, want := cmdline(pid), n.bin+"\x00-f\x00"; got != want {
		t.Errorf("daemon %d cmdline %q, want %q", pid, got, want)
	}
	out, rc := n.run("get_server_list\n")
	server, err := strconv.Atoi(strings.TrimSpace(out))
	if rc != 0 || err != nil || server <= 0 {
		t.Fatalf("get_server_list: exit %d: %q; want one pid", rc, out)
	}
	n.stop(server)
	if got := cmdline(server); got != ServerName+"\x00" {
		t.Errorf("server %d cmdline %q, want %q", server, got, ServerName+"\x00")
	}
	if out, rc := n.run("quit\n"); rc != 0 || out != "" {
		t.Errorf("quit: exit %d: %q; want 0, nothing printed", rc, out)
	}
	if !gone(pid) || !gone(server) {
		t.Errorf("after quit: daemon %d gone %v, server %d gone %v; want both gone", pid, gone(pid), server, gone(server))
	}
	for _, f := range []string{"control", "nvidia-cuda-mps-control.pid"} {
		if _, err := os.Stat(n.pipe + "/" + f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after quit: %v; want it removed", f, err)
		}
	}
	log, _ := os.ReadFile(n.logDir + "/control.log")
	if want := "started\nCmd:get_server_list\nCmd:quit\nExit with status 0\n"; string(log) != want {
		t.Errorf("control.log:\n%s\nwant\n%s", log, want)
	}
	if out, rc := n.run("get_server_list\n"); rc != 1 || !strings.Contains(out, "Cannot find MPS control daemon process") {
		t.Errorf("client with no daemon: exit %d: %q; want 1, Cannot find MPS control daemon process", rc, out)
	}
}

// TestNoServerIgnoreQuit: without fake-server the list is empty; with
// fake-ignore-quit quit is answered with nothing and the daemon keeps
// running and serving, SIGTERM ignored.
func TestNoServerIgnoreQuit(t *testing.T) {
	n := newNode(t, MarkerIgnoreQuit)
	if out, rc := n.run("", "-d"); rc != 0 {
		t.Fatalf("-d: exit %d: %s", rc, out)
	}
	pid := n.daemonPID()
	n.stop(pid)
	if out, rc := n.run("get_server_list\n"); rc != 0 || out != "" {
		t.Errorf("get_server_list: exit %d: %q; want 0, no server", rc, out)
	}
	if out, rc := n.run("quit\n"); rc != 0 || out != "" {
		t.Errorf("quit: exit %d: %q", rc, out)
	}
	unix.Kill(pid, unix.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil || bytes.Contains(st, []byte(") Z ")) {
		t.Fatalf("daemon %d exited; want it to ignore quit and SIGTERM", pid)
	}
	if out, rc := n.run("get_server_list\n"); rc != 0 {
		t.Errorf("get_server_list after quit: exit %d: %q; want the daemon still serving", rc, out)
	}
}

// TestFailStart: with fake-fail-start, -d exits 1 and starts nothing.
func TestFailStart(t *testing.T) {
	n := newNode(t, MarkerFailStart)
	if out, rc := n.run("", "-d"); rc != 1 || !strings.Contains(out, "cannot start") {
		t.Errorf("-d: exit %d: %q; want 1, cannot start", rc, out)
	}
	if _, err := os.Stat(n.pipe + "/control"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket: %v; want none", err)
	}
}

// TestLife: the daemon and the server end by themselves after the life
// GPUPREP_MPSSIM_LIFE gives; a bad value is refused.
func TestLife(t *testing.T) {
	n := newNode(t, MarkerServer)
	// Long enough for the steps below on a loaded machine (at 1 s the
	// daemon was gone before get_server_list in CI), short enough to wait.
	const life = 5 * time.Second
	n.lifeEnv = life.String()
	if out, rc := n.run("", "-d"); rc != 0 {
		t.Fatalf("-d: exit %d: %s", rc, out)
	}
	pid := n.daemonPID()
	n.stop(pid)
	out, _ := n.run("get_server_list\n")
	server, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("get_server_list: %q", out)
	}
	n.stop(server)
	// Each gone call waits up to 2 s; a slow machine gets its life four
	// times over.
	time.Sleep(life)
	for deadline := time.Now().Add(4 * life); time.Now().Before(deadline) && !(gone(pid) && gone(server)); {
	}
	if !gone(pid) || !gone(server) {
		t.Errorf("after its life: daemon %d gone %v, server %d gone %v; want both gone", pid, gone(pid), server, gone(server))
	}
	n.lifeEnv = "forever"
	if out, rc := n.run("get_server_list\n"); rc != 2 || !strings.Contains(out, LifeEnv) {
		t.Errorf("%s=forever: exit %d: %q; want 2 naming it", LifeEnv, rc, out)
	}
}
