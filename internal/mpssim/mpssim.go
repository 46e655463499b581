// Package mpssim is a simulated nvidia-cuda-mps-control (and the
// nvidia-cuda-mps-server it starts) that needs no GPU and no root: lib/mps's
// tests run it (their test binary re-executed under those names), and
// `make demo` runs it built as bin/sim/nvidia-cuda-mps-control. It behaves
// like the real programs as observed on an H200 with driver 580:
//
//	-d         start the daemon (-f in a new session) and exit once its
//	           control socket exists;
//	-f         the daemon: listen on <pipe>/control, write
//	           <pipe>/nvidia-cuda-mps-control.pid and <log>/control.log,
//	           answer get_server_list (one pid a line) and quit (stop the
//	           server, remove the socket and pid file, exit 0);
//	(no args)  the client: send stdin to the daemon, print its answer;
//	           "Cannot find MPS control daemon process", exit 1, when none.
//
// <pipe> is $CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps), <log>
// $CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps). Files in the
// pipe directory's parent (gpuprep's <base>/<user>-<key>) steer the
// daemon: fake-server (start one server, "nvidia-cuda-mps-server", at
// start), fake-ignore-quit (answer quit with nothing and keep running,
// SIGTERM and SIGHUP ignored), fake-fail-start (-d fails, exit 1).
//
// Nothing it starts lives forever: the daemon exits (status 3) after the
// life $GPUPREP_MPSSIM_LIFE gives (a Go duration, DefaultLife when unset),
// and the server, run under its own name, sleeps that long and exits 0.
package mpssim

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The names the program dispatches on (the base of args[0]), and the
// variables that place the daemon's directories: lib/mps's ControlName,
// ServerName, PipeEnv and LogEnv (this package cannot import lib/mps,
// whose tests import it).
const (
	ControlName = "nvidia-cuda-mps-control"
	ServerName  = "nvidia-cuda-mps-server"
	PipeEnv     = "CUDA_MPS_PIPE_DIRECTORY"
	LogEnv      = "CUDA_MPS_LOG_DIRECTORY"
	// LifeEnv bounds how long a simulated daemon or server runs.
	LifeEnv = "GPUPREP_MPSSIM_LIFE"
)

// DefaultLife is the life of a daemon or server when LifeEnv is unset.
const DefaultLife = 10 * time.Minute

// Markers, files in the pipe directory's parent, that steer the daemon.
const (
	MarkerServer     = "fake-server"
	MarkerIgnoreQuit = "fake-ignore-quit"
	MarkerFailStart  = "fake-fail-start"
)

// Main runs the program args[0] names (ControlName or ServerName, by its
// base) with args[1:], and returns its exit status. env reads the
// variables above (os.Getenv, or a wrapper that sets defaults); the
// processes it starts inherit the process environment. It reads os.Stdin
// and writes os.Stdout and os.Stderr.
func Main(args []string, env func(string) string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "mpssim: no program name")
		return 2
	}
	life := DefaultLife
	if s := env(LifeEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "mpssim: %s=%q: want a positive Go duration (10m, 30s)\n", LifeEnv, s)
			return 2
		}
		life = d
	}
	switch filepath.Base(args[0]) {
	case ServerName:
		time.Sleep(life)
		return 0
	case ControlName:
	default:
		fmt.Fprintf(os.Stderr, "mpssim: run as %q: want %s or %s\n", args[0], ControlName, ServerName)
		return 2
	}
	pipe := env(PipeEnv)
	if pipe == "" {
		pipe = "/tmp/nvidia-mps"
	}
	logDir := env(LogEnv)
	if logDir == "" {
		logDir = "/var/log/nvidia-mps"
	}
	marker := func(name string) bool {
		_, err := os.Stat(filepath.Join(filepath.Dir(pipe), name))
		return err == nil
	}
	switch {
	case len(args) == 1:
		return client(pipe)
	case isDaemonFlag(args[1]) && marker(MarkerFailStart):
		fmt.Println("fake: cannot start the daemon")
		return 1
	case isDaemonFlag(args[1]):
		return daemonize(args[0], pipe)
	case args[1] == "-f" || args[1] == "--foreground":
		return (&daemon{
			self:       args[0],
			pipe:       pipe,
			logDir:     logDir,
			life:       life,
			server:     marker(MarkerServer),
			ignoreQuit: marker(MarkerIgnoreQuit),
		}).run()
	}
	fmt.Fprintln(os.Stderr, "fake: unexpected arguments", args[1:])
	return 2
}

func isDaemonFlag(a string) bool { return a == "-d" || a == "--daemon" }
