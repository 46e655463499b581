package srunwrapcmd

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/srunconf"
)

// srunMain is `srunwrap [flags] --srun [srun args] -- cmd args...`: it
// execs srun with this srunwrap, and the flags given before --srun,
// inserted before the command, so that every task goes through it:
//
//	srun [srun args] /path/to/srunwrap [flags] -- cmd args...
//
// The srun arguments are srun's own and are passed as given.
func srunMain(e cmdenv.Env, sys system, own, rest []string) int {
	var f flags
	fs := f.flagSet(io.Discard)
	if err := fs.Parse(own); err != nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, fmt.Errorf("%v (see -h)", err))
	}
	if fs.NArg() > 0 {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, fmt.Errorf("unexpected %s before --srun (usage: srunwrap [flags] --srun [srun args] -- cmd args...)", srunconf.QuoteN(fs.Arg(0), srunconf.ShowMax)))
	}
	if f.explain || f.taskProlog {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, errors.New("--srun runs a command: it does not go with --explain or --task-prolog"))
	}
	sep := slices.Index(rest, "--")
	if sep < 0 || sep == len(rest)-1 {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, errors.New("--srun needs -- and a command after the srun arguments (srunwrap --srun -N2 --gpus-per-node=8 -- python train.py)"))
	}
	srun, err := sys.lookPath("srun")
	if err != nil {
		return cmdenv.Fail(e.Stderr, prog, exitNotFound, fmt.Errorf("--srun: srun: %w", unwrapExec(err)))
	}
	self, err := sys.self()
	if err != nil {
		return cmdenv.Fail(e.Stderr, prog, exitCannotExec, fmt.Errorf("--srun: cannot find srunwrap's own path: %w", err))
	}
	argv := append([]string{"srun"}, rest[:sep]...)
	argv = append(argv, self)
	argv = append(argv, own...)
	argv = append(argv, rest[sep:]...)
	err = sys.exec(srun, argv, sys.environ())
	return cmdenv.Fail(e.Stderr, prog, exitCannotExec, fmt.Errorf("exec %s: %w", srun, err))
}
