package srunwrapcmd

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"gpuprep/lib/bind"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/nccl"
)

// system is what srunwrap asks of the operating system, as functions so
// that the command's tests run in-process without binding or exec'ing the
// test binary.
type system struct {
	taskCPUs func(host.Root) (allowed, job cpuset.Set, err error)
	memlock  func() (uint64, error)
	environ  func() []string
	uid      func() int // this process's real uid (the job's user's)
	lookPath func(file string) (string, error)
	self     func() (string, error)
	// apply binds the calling OS thread (lib/bind.Apply); the caller has
	// locked its goroutine to the thread, and execs from it.
	apply func(bind.Plan) (bind.Applied, []bind.Warning, error)
	// exec replaces the process (execve); it returns only on failure.
	exec func(path string, argv, env []string) error
}

// osSystem is the real one.
func osSystem() system {
	return system{
		taskCPUs: bind.TaskCPUs,
		memlock:  nccl.Memlock,
		environ:  os.Environ,
		uid:      os.Getuid,
		lookPath: exec.LookPath,
		self:     os.Executable,
		apply:    bind.Apply,
		exec:     unix.Exec,
	}
}
