// Package cli holds what gpuprep-prolog, gpuprep-epilog, gpuprep-health and
// gpuprep-gres share on the command line:
// the common flags of DESIGN.md's contract (--config, --root, --gpu-backend,
// --json, --log-level, --version) and their parsing (cli.go), the process's
// arguments, environment and standard streams as one value (env.go), exit
// codes and one-line errors (cli.go), logging to stderr or to a log file and
// syslog (logging.go), running under one deadline (deadline.go) and JSON
// output (output.go).
//
// Every program's main is the same line: its command package's entry point,
// a func(cli.Env) int, called with the process's Env, and its result as the
// exit status:
//
//	func main() { os.Exit(grescmd.Main(cli.OS())) }
//
// The command packages (lib/hookcmd, lib/healthcmd, lib/grescmd,
// lib/srunwrapcmd) turn flags and environment into one library call and
// its outcome into output and an exit code; the libraries below them know
// nothing of the command line.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Exit codes shared by the programs (cmdenv's).
const (
	ExitOK       = cmdenv.ExitOK
	ExitMismatch = cmdenv.ExitMismatch
	ExitBadInput = cmdenv.ExitBadInput
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

// builtinLogLevel is general.log_level in lib/config/defaults.toml, for
// --log-level's help (TestLogLevelHelp holds them equal; parsing the
// defaults at every start to print it would cost the hooks time).
const builtinLogLevel = "info"

// Register adds the common flags to fs.
func (c *Common) Register(fs *pflag.FlagSet) {
	fs.StringVar(&c.ConfigPath, "config", config.DefaultPath, "configuration file (built-in defaults when the default path is absent)")
	fs.StringVar(&c.Root, "root", "/", "directory standing for the node's / (a fixture root in tests)")
	fs.StringVar(&c.GPUBackend, "gpu-backend", "", "auto|nvml|procfs|none (test builds: mock:<dgxa100|dgxh100|dgxh200|dgxb200>; default: the config's, else auto)")
	fs.BoolVar(&c.JSON, "json", false, "print JSON")
	fs.StringVar(&c.LogLevel, "log-level", "", "debug|info|warn|error (default: the config's general.log_level, "+builtinLogLevel+" unless it sets one)")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
}

// NewFlagSet is cmdenv.NewFlagSet.
func NewFlagSet(prog, synopsis string, errOut io.Writer) *pflag.FlagSet {
	return cmdenv.NewFlagSet(prog, synopsis, errOut)
}

// Parse is cmdenv.Parse with the common --version flag.
func Parse(fs *pflag.FlagSet, c *Common, args []string, stdout io.Writer) (done bool, code int) {
	return cmdenv.Parse(fs, &c.Version, args, stdout)
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
	level, err := c.Level(cfg)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// Level is --log-level, else the config's level, else warn.
func (c *Common) Level(cfg *config.Config) (slog.Level, error) {
	lvl := c.LogLevel
	if lvl == "" && cfg != nil {
		lvl = cfg.General.LogLevel
	}
	switch strings.ToLower(lvl) {
	case "", "warn", "warning":
		return slog.LevelWarn, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", lvl)
}

// Fail is cmdenv.Fail.
func Fail(w io.Writer, prog string, code int, err error) int { return cmdenv.Fail(w, prog, code, err) }

// Placeholder is the command of a program whose issue has not landed: it
// answers -h and --version, says it is not implemented, and exits non-zero.
func Placeholder(prog, synopsis, issue string, e Env) int {
	var c Common
	fs := NewFlagSet(prog, synopsis, e.Stderr)
	c.Register(fs)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	if done, code := Parse(fs, &c, e.Args, e.Stdout); done {
		return code
	}
	fmt.Fprintf(e.Stderr, "%s: not implemented yet (%s); do not install it as a Slurm hook yet\n", prog, issue)
	return ExitMismatch
}
