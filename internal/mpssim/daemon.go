package mpssim

import (
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
	"time"
)

// daemonize starts `self -f` in a session of its own, with no file of
// ours open, and returns once its socket, <pipe>/control, exists (5 s at
// most).
func daemonize(self, pipe string) int {
	cmd := exec.Command(self, "-f")
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

// daemon is the control daemon run with -f.
type daemon struct {
	self, pipe, logDir string
	life               time.Duration
	server, ignoreQuit bool // the markers
}

// logf appends a line to <log>/control.log, as the real daemon logs.
func (d *daemon) logf(format string, a ...any) {
	f, err := os.OpenFile(filepath.Join(d.logDir, "control.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		fmt.Fprintf(f, format+"\n", a...)
		f.Close()
	}
}

// startServer runs nvidia-cuda-mps-server, argv[0] the bare name as the
// real daemon starts it: the program of that name next to self, or, when
// there is none, this program itself under that name.
func (d *daemon) startServer() (*exec.Cmd, error) {
	bin := filepath.Join(filepath.Dir(d.self), ServerName)
	if _, err := os.Stat(bin); err != nil {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	srv := exec.Command(bin)
	srv.Args[0] = ServerName
	if err := srv.Start(); err != nil {
		return nil, err
	}
	go srv.Wait()
	return srv, nil
}

func (d *daemon) run() int {
	time.AfterFunc(d.life, func() { os.Exit(3) })
	if d.ignoreQuit {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	}
	var srv *exec.Cmd
	if d.server {
		var err error
		if srv, err = d.startServer(); err != nil {
			d.logf("server: %v", err)
			return 1
		}
	}
	if f, err := os.OpenFile(d.pipe+"/nvidia-cuda-mps-control.pid", os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644); err == nil {
		f.WriteString(strconv.Itoa(os.Getpid()))
		f.Close()
	}
	ln, err := net.Listen("unix", d.pipe+"/control")
	if err != nil {
		d.logf("listen: %v", err)
		return 1
	}
	// Any user's client may connect: the real daemon leaves the socket
	// 0666, and the pipe directory decides who reaches it.
	os.Chmod(d.pipe+"/control", 0o666)
	d.logf("started")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		in, _ := io.ReadAll(c)
		for _, cmd := range strings.Split(strings.TrimSpace(string(in)), "\n") {
			d.logf("Cmd:%s", cmd)
			switch {
			case cmd == "get_server_list":
				if srv != nil && srv.ProcessState == nil {
					fmt.Fprintln(c, srv.Process.Pid)
				}
			case cmd == "quit" && d.ignoreQuit:
				d.logf("quit ignored")
			case cmd == "quit":
				if srv != nil {
					srv.Process.Signal(syscall.SIGTERM)
					time.Sleep(20 * time.Millisecond)
				}
				os.Remove(d.pipe + "/control")
				os.Remove(d.pipe + "/nvidia-cuda-mps-control.pid")
				c.Close()
				d.logf("Exit with status 0")
				return 0
			default:
				fmt.Fprintln(c, "unknown command", cmd)
			}
		}
		c.Close()
	}
}
