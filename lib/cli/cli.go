// Package cli holds what the four gpuprep programs share on the command line:
// the common flags of DESIGN.md's contract (--config, --root, --gpu-backend,
// --json, --log-level, --version), logging, exit codes and one-line errors.
// The mains stay thin: flags and environment in, one library call, an exit
// code out.
package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Version is set at build time with -ldflags "-X gpuprep/lib/cli.Version=...".
var Version = "dev"

// Exit codes shared by the programs.
const (
	ExitOK       = 0 // success; for hooks: the job may run
	ExitMismatch = 1 // a check found differences; for hooks: a node problem
	ExitBadInput = 2 // bad flags, config, input file or environment
)

// Common are the flags every program takes.
type Common struct {
	ConfigPath string
	Root       string
	GPUBackend string
	JSON       bool
	LogLevel   string
	Version    bool
}

// Register adds the common flags to fs.
func (c *Common) Register(fs *pflag.FlagSet) {
	fs.StringVar(&c.ConfigPath, "config", config.DefaultPath, "configuration file (built-in defaults when the default path is absent)")
	fs.StringVar(&c.Root, "root", "/", "directory standing for the node's / (a fixture root in tests)")
	fs.StringVar(&c.GPUBackend, "gpu-backend", "", "auto|nvml|procfs|none (test builds: mock:<dgxa100|dgxh100|dgxh200|dgxb200>; default: the config's, else auto)")
	fs.BoolVar(&c.JSON, "json", false, "print JSON")
	fs.StringVar(&c.LogLevel, "log-level", "", "debug|info|warn|error (default: the config's, else warn)")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
}

// NewFlagSet returns a flag set whose usage text starts with synopsis.
func NewFlagSet(prog, synopsis string, out io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(out, "%s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs
}

// Parse parses args; it returns done=true with the exit code when the
// program should stop now (-h, --version, a bad flag).
func Parse(fs *pflag.FlagSet, c *Common, args []string, stdout io.Writer) (done bool, code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, ExitOK
		}
		fmt.Fprintf(fs.Output(), "%s: %v (see -h)\n", fs.Name(), err)
		return true, ExitBadInput
	}
	if c.Version {
		fmt.Fprintf(stdout, "%s %s\n", fs.Name(), Version)
		return true, ExitOK
	}
	return false, ExitOK
}

// LoadConfig reads the configuration named by --config.
func (c *Common) LoadConfig() (*config.Config, error) {
	return config.Load(c.ConfigPath)
}

// HostRoot is the --root as a host.Root.
func (c *Common) HostRoot() host.Root { return host.NewRoot(c.Root) }

// OpenGPU opens the GPU backend named by --gpu-backend, else by the config,
// else auto.
func (c *Common) OpenGPU(cfg *config.Config) (gpu.Backend, error) {
	spec := c.GPUBackend
	if spec == "" && cfg != nil {
		spec = cfg.General.GPUBackend
	}
	if spec == "" {
		spec = "auto"
	}
	return gpu.Open(spec, c.HostRoot())
}

// Logger returns a text logger on w at --log-level, else the config's level,
// else warn.
func (c *Common) Logger(w io.Writer, cfg *config.Config) (*slog.Logger, error) {
	lvl := c.LogLevel
	if lvl == "" && cfg != nil {
		lvl = cfg.General.LogLevel
	}
	var level slog.Level
	switch strings.ToLower(lvl) {
	case "", "warn", "warning":
		level = slog.LevelWarn
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", lvl)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// Fail prints err as one line, "prog: message", and returns code. Hooks rely
// on this: the first stderr line becomes Slurm's drain reason.
func Fail(w io.Writer, prog string, code int, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(w, "%s: %s\n", prog, msg)
	return code
}

// Placeholder is the main of a program whose issue has not landed: it answers
// -h and --version, says it is not implemented, and exits non-zero.
func Placeholder(prog, synopsis, issue string, args []string) int {
	var c Common
	fs := NewFlagSet(prog, synopsis, os.Stderr)
	c.Register(fs)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	if done, code := Parse(fs, &c, args, os.Stdout); done {
		return code
	}
	fmt.Fprintf(os.Stderr, "%s: not implemented yet (%s); do not install it as a Slurm hook yet\n", prog, issue)
	return ExitMismatch
}
