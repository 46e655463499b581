// Package cmdenv is what every gpuprep program shares with its process and
// nothing more: its arguments, environment and standard streams (Env), exit
// codes and one-line failures, flag parsing with -h and --version, JSON
// output and the version. It imports no gpuprep package, so srunwrap, which
// runs once per task and must start about as fast as a bare exec, links
// only this; lib/cli adds the common flags, the configuration, the GPU
// backends and logging for the other programs.
package cmdenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Version is the release (semantic version) and Commit the git commit the
// programs were built from, set at build time with -ldflags
// "-X gpuprep/lib/cmdenv.Version=... -X gpuprep/lib/cmdenv.Commit=...".
var (
	Version = "dev"
	Commit  = ""
)

// Exit codes shared by the programs.
const (
	ExitOK       = 0 // success; for hooks: the job may run
	ExitMismatch = 1 // a check found differences; for hooks: a node problem
	ExitBadInput = 2 // bad flags, config, input file or environment
)

// Env is what a program gets from its process: its arguments, its
// environment and its standard streams. A command package's entry point
// takes an Env and returns the exit code, so tests run the whole command
// in-process with buffers and a map for the environment.
type Env struct {
	Args   []string            // the arguments, without the program's name
	Getenv func(string) string // the environment
	Stdout io.Writer
	Stderr io.Writer
}

// OS is this process's Env: os.Args[1:], os.Getenv, os.Stdout, os.Stderr.
func OS() Env {
	return Env{Args: os.Args[1:], Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}
}

// Fail prints err as one line, "prog: message", and returns code. Hooks rely
// on this: the first stderr line becomes Slurm's drain reason.
func Fail(w io.Writer, prog string, code int, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(w, "%s: %s\n", prog, msg)
	return code
}

// NewFlagSet returns a flag set whose usage text starts with synopsis;
// errors go to errOut (stderr), the usage asked for with -h or --help to
// Parse's stdout.
func NewFlagSet(prog, synopsis string, errOut io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs
}

// Parse parses args; it returns done=true with the exit code when the
// program should stop now: -h or --help (the usage on stdout, exit 0),
// --version (*version set after parsing: stdout, exit 0), a bad flag
// (stderr, exit 2).
func Parse(fs *pflag.FlagSet, version *bool, args []string, stdout io.Writer) (done bool, code int) {
	errOut := fs.Output()
	// With ContinueOnError pflag writes to its output only the usage
	// asked for with -h or --help: that goes to stdout.
	fs.SetOutput(stdout)
	err := fs.Parse(args)
	fs.SetOutput(errOut)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, ExitOK
		}
		fmt.Fprintf(fs.Output(), "%s: %v (see -h)\n", fs.Name(), err)
		return true, ExitBadInput
	}
	if version != nil && *version {
		fmt.Fprintln(stdout, VersionLine(fs.Name()))
		return true, ExitOK
	}
	return false, ExitOK
}

// VersionLine is what --version prints: "prog 0.1.0 (commit 0123456789ab)",
// or "prog 0.1.0" when the build did not set Commit.
func VersionLine(prog string) string {
	if Commit == "" {
		return prog + " " + Version
	}
	return prog + " " + Version + " (commit " + Commit + ")"
}

// WriteJSON prints v as indented JSON (two spaces) and a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
