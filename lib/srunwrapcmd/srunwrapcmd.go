// Package srunwrapcmd is the command line of srunwrap: `srunwrap [flags]
// [--] cmd args...` runs one Slurm task on the CPUs and memory next to its
// GPU, with its GPU alone visible and NCCL set for the fabric, then execs
// the command. The placement is lib/bind's, the NCCL variables and runtime
// checks lib/nccl's, the node description lib/nodedesc's; this package
// gathers the task's inputs, prints and decides, and execs.
package srunwrapcmd

import (
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/spf13/pflag"

	"gpuprep/lib/cmdenv"
)

const prog = "srunwrap"

const synopsis = `usage: srunwrap [flags] [--] cmd args...
       srunwrap --srun [srun args] -- cmd args...
       srunwrap --explain [--tasks N] [--json]
       srunwrap --task-prolog

Runs one Slurm task (srun srunwrap -- python train.py) on the CPUs and
memory of its GPU's NUMA node, with CUDA_VISIBLE_DEVICES narrowed to its
GPU and NCCL set for the fabric, then execs the command: signals and the
exit code are the command's. Where gpuprep-prolog runs an MPS control
daemon for the job's user on exactly the rank's GPU, the rank gets
CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, and its GPU by UUID,
unless CUDA_MPS_PIPE_DIRECTORY is set already. Problems (odd Slurm
variables, an unknown GPU, stale NCCL settings) are one-line warnings
and the command still runs, unless [srunwrap.checks] says refuse (exit
1, nothing runs).

--explain prints every local rank's plan (GPU, CPUs, memory, HCAs, MPS,
NCCL variables and where each came from) and runs nothing; outside a
Slurm step --tasks N ranks over every GPU of the node. --srun runs srun with srunwrap
inserted before the command. --task-prolog prints export lines for a Slurm
TaskProlog, for sites that set NCCL variables without wrapping.

srunwrap takes its settings ([srunwrap] and [[nccl.fabric]] of
/etc/gpuprep/gpuprep.toml) from the node description gpuprep-prolog writes
to /run/gpuprep, so that a rank reads one small file: no TOML, no sysfs
walk, no NVML. Without the description it reads the node from sysfs and
uses the built-in settings.`

// flags are srunwrap's own flags.
type flags struct {
	root       string
	json       bool
	version    bool
	explain    bool
	srun       bool
	taskProlog bool
	tasks      int
	quiet      bool
	verbose    bool
}

// Main is srunwrap; it returns the exit code when it does not exec.
func Main(e cmdenv.Env) int { return run(e, osSystem()) }

func run(e cmdenv.Env, sys system) int {
	// A task is bound and exec'd from one OS thread (affinity and memory
	// policy are per thread). Locking first, not just before binding, lets
	// the thread Go starts for a locked goroutine settle while srunwrap
	// plans; locking late made exec wait for it: 0.6 ms more per task on
	// the 2-core dev VM.
	runtime.LockOSThread()
	// --srun takes srun's own flags, which srunwrap's parser must not see.
	if i := slices.Index(e.Args, "--srun"); i >= 0 && !slices.Contains(e.Args[:i], "--") {
		return srunMain(e, sys, e.Args[:i], e.Args[i+1:])
	}
	var f flags
	fs := f.flagSet(e.Stderr)
	if done, code := cmdenv.Parse(fs, &f.version, e.Args, e.Stdout); done {
		return code
	}
	if f.tasks < 0 || f.tasks > 4096 {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, fmt.Errorf("--tasks %d: want 1..4096", f.tasks))
	}
	g := gather(e, f, sys)
	switch {
	case f.explain:
		return explainMain(e, f, g)
	case f.taskProlog:
		return taskPrologMain(e, f, g)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, fmt.Errorf("no command to run (usage: srunwrap [flags] [--] cmd args...)"))
	}
	return taskMain(e, f, g, sys, argv)
}

// flagSet registers srunwrap's flags on a new flag set. The first
// argument that is not a flag starts the command.
func (f *flags) flagSet(stderr io.Writer) *pflag.FlagSet {
	fs := cmdenv.NewFlagSet(prog, synopsis, stderr)
	fs.StringVar(&f.root, "root", "/", "directory standing for the node's / (a fixture root in tests)")
	fs.BoolVar(&f.explain, "explain", false, "print every local rank's plan and run nothing")
	fs.IntVar(&f.tasks, "tasks", 0, "with --explain outside a Slurm step: plan this many ranks over every GPU (default: one per GPU)")
	fs.BoolVar(&f.taskProlog, "task-prolog", false, "print export lines for a Slurm TaskProlog (NCCL variables, CUDA_VISIBLE_DEVICES) and run nothing")
	fs.Bool("srun", false, "srunwrap [flags] --srun [srun args] -- cmd: run srun with srunwrap [flags] inserted before cmd")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no warnings (refusals still print)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print each rank's GPU, CPUs, memory and NCCL_IB_HCA on stderr before running")
	fs.BoolVar(&f.json, "json", false, "with --explain: print JSON")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.SetInterspersed(false)
	return fs
}

// warnf prints one warning line unless quiet.
func warnf(w io.Writer, quiet bool, format string, a ...any) {
	if !quiet {
		fmt.Fprintf(w, prog+": warning: "+format+"\n", a...)
	}
}
