package mps

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary plays nvidia-cuda-mps-control and nvidia-cuda-mps-server
// when it is started under either name (symlinks that fakeBin makes), the
// way the real programs behave on an H200 with driver 580:
//
//	-d         start the daemon (-f in a new session) and exit once its
//	           control socket exists;
//	-f         the daemon: listen on <pipe>/control, write
//	           <pipe>/nvidia-cuda-mps-control.pid and <log>/control.log,
//	           answer get_server_list (one pid a line) and quit (stop the
//	           server, remove the socket, exit);
//	(no args)  the client: send stdin to the daemon, print its answer;
//	           "Cannot find MPS control daemon process", exit 1, when none.
//
// Files in the daemon's directory (the pipe's parent) steer it:
// fake-server (start one server, "nvidia-cuda-mps-server", at start),
// fake-ignore-quit (answer quit with nothing and keep running, SIGTERM
// ignored), fake-fail-start (-d fails). Every fake process ends by itself
// after fakeLife, so a failed test leaves nothing running for long.
const fakeLife = 60 * time.Second

// TestMain runs the fake when started under its names, the tests
// otherwise, as a child subreaper: the fake daemons, which leave their -d
// parent, stay its descendants, and it reaps what exited once the tests
// are done (some sandboxes' init reaps nothing).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case ControlName, ServerName:
		os.Exit(fakeMain())
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

func fakeMain() int {
	if filepath.Base(os.Args[0]) == ServerName {
		time.Sleep(fakeLife)
		return 0
	}
	pipe := os.Getenv(PipeEnv)
	if pipe == "" {
		pipe = "/tmp/nvidia-mps"
	}
	marker := func(name string) bool {
		_, err := os.Stat(filepath.Join(filepath.Dir(pipe), name))
		return err == nil
	}
	args := os.Args[1:]
	switch {
	case len(args) == 0:
		return fakeClient(pipe)
	case args[0] == "-d" && marker("fake-fail-start"):
		fmt.Println("fake: cannot start the daemon")
		return 1
	case args[0] == "-d":
		return fakeDaemonize(pipe)
	case args[0] == "-f":
		return fakeDaemon(pipe, marker("fake-server"), marker("fake-ignore-quit"))
	}
	fmt.Fprintln(os.Stderr, "fake: unexpected arguments", args)
	return 2
}

// fakeDaemonize starts the daemon in a session of its own, with no file
// of ours open, and returns once its socket exists.
func fakeDaemonize(pipe string) int {
	cmd := exec.Command(os.Args[0], "-f")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("fake:", err)
		return 1
	}
	for range 500 {
		if _, err := os.Stat(pipe + "/control"); err == nil {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("fake: the daemon made no socket")
	return 1
}

func fakeDaemon(pipe string, server, ignoreQuit bool) int {
	time.AfterFunc(fakeLife, func() { os.Exit(3) })
	if ignoreQuit {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	}
	logf := func(format string, a ...any) {
		f, err := os.OpenFile(filepath.Join(os.Getenv(LogEnv), "control.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintf(f, format+"\n", a...)
			f.Close()
		}
	}
	var srv *exec.Cmd
	if server {
		srv = exec.Command(filepath.Join(filepath.Dir(os.Args[0]), ServerName))
		srv.Args[0] = ServerName // as the real daemon starts it
		if err := srv.Start(); err != nil {
			logf("server: %v", err)
			return 1
		}
		go srv.Wait()
	}
	os.WriteFile(pipe+"/nvidia-cuda-mps-control.pid", []byte(strconv.Itoa(os.Getpid())), 0o666)
	ln, err := net.Listen("unix", pipe+"/control")
	if err != nil {
		logf("listen: %v", err)
		return 1
	}
	logf("started")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		in, _ := io.ReadAll(c)
		for _, cmd := range strings.Split(strings.TrimSpace(string(in)), "\n") {
			logf("Cmd:%s", cmd)
			switch {
			case cmd == "get_server_list":
				if srv != nil && srv.ProcessState == nil {
					fmt.Fprintln(c, srv.Process.Pid)
				}
			case cmd == "quit" && ignoreQuit:
				logf("quit ignored")
			case cmd == "quit":
				if srv != nil {
					srv.Process.Signal(syscall.SIGTERM)
					time.Sleep(20 * time.Millisecond)
				}
				os.Remove(pipe + "/control")
				os.Remove(pipe + "/nvidia-cuda-mps-control.pid")
				c.Close()
				logf("Exit with status 0")
				return 0
			default:
				fmt.Fprintln(c, "unknown command", cmd)
			}
		}
		c.Close()
	}
}

func fakeClient(pipe string) int {
	in, _ := io.ReadAll(os.Stdin)
	c, err := net.Dial("unix", pipe+"/control")
	if err != nil {
		fmt.Fprintln(os.Stderr, "Cannot find MPS control daemon process")
		return 1
	}
	c.Write(in)
	c.(*net.UnixConn).CloseWrite()
	io.Copy(os.Stdout, bufio.NewReader(c))
	return 0
}

// fakeBin returns the path of a fake nvidia-cuda-mps-control, next to a
// fake nvidia-cuda-mps-server: symlinks to the test binary.
func fakeBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{ControlName, ServerName} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, ControlName)
}
