//go:build gpuprep_crashpoints

package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// On says whether this build counts steps (-tags gpuprep_crashpoints).
const On = true

// Environment variables of a crashpoints build (see the package comment).
const (
	envAt  = "GPUPREP_CRASH_AT"
	envLog = "GPUPREP_CRASH_LOG"
)

var (
	mu    sync.Mutex
	steps int
	at    = -1 // 0 or less: never kill
	logFD = -1
	once  sync.Once
)

// setup reads the environment once: a bad GPUPREP_CRASH_AT, or a log file
// that cannot be opened, ends the process (exit 97) rather than run the
// hook untested.
func setup() {
	if v := os.Getenv(envAt); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crashpoint: %s=%q: %v\n", envAt, v, err)
			os.Exit(97)
		}
		at = n
	}
	if p := os.Getenv(envLog); p != "" {
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crashpoint: %s=%q: %v\n", envLog, p, err)
			os.Exit(97)
		}
		logFD = fd
	}
}

// hit counts a step, logs it, and kills the process at the chosen one. The
// lock holds the other goroutines back, so that none makes a change after
// the step the process dies at.
func hit(op, path string) {
	once.Do(setup)
	mu.Lock()
	steps++
	if logFD >= 0 {
		unix.Write(logFD, []byte(strconv.Itoa(steps)+" "+op+" "+path+"\n"))
	}
	if steps == at {
		unix.Kill(os.Getpid(), unix.SIGKILL)
		select {} // never released: SIGKILL ends every thread
	}
	mu.Unlock()
}
