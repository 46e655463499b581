// Package hookcmd is the command line of gpuprep-prolog and gpuprep-epilog:
// their flags, the job from Slurm's environment, one deadline for the whole
// run, the node lock, and what becomes of the engine's outcome (lib/hook):
// the log, the plan table or JSON (output.go), the node_exporter metrics
// (metrics.go, through lib/textfile), the drain reason (drain.go) and the
// exit code; and the modes that run no engine: --check-config
// (lib/checkconfig), the prolog's --health (health.go), the
// epilog's --report and --report --from (report.go). The engine itself
// (recover, plan, journal, apply, record) is lib/hook; gpuprep-health is
// lib/healthcmd.
package hookcmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"gpuprep/lib/checkconfig"
	"gpuprep/lib/cli"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/hook"
	"gpuprep/lib/isolate/sdunits"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// flags are the hook programs' flags beyond cli.Common.
type flags struct {
	common      cli.Common
	stateDir    string
	dryRun      bool
	checkConfig bool
	jobID       string
	jobUser     string
	jobGPUs     string
	constraints string
	comment     string
	report      bool
	job         string // --report --job: the job's evidence (evidence.go)
	since       time.Duration
	fleet       fleetFlags // --report --from (report.go)
	health      bool
	held        bool // --held (restoreall.go)
	restoreAll  bool // --restore-all
	force       bool // --restore-all --force
}

// Prolog is gpuprep-prolog: it applies the job's tuning profile. It reads
// the job from Slurm's environment (flags override it for manual runs), runs
// under one deadline, and returns the exit code: 0 the job may run, 1 a node
// problem (the first stderr line is the reason), 2 bad input.
func Prolog(e cli.Env) int { return command("prolog", e) }

// Epilog is gpuprep-epilog: it records drift and restores the node when the
// last job using a knob ends; --report prints the drift history. Exit codes
// as for Prolog.
func Epilog(e cli.Env) int { return command("epilog", e) }

// command is either hook program: op is "prolog" or "epilog".
func command(op string, e cli.Env) int {
	getenv, stdout, stderr := e.Getenv, e.Stdout, e.Stderr
	prog := "gpuprep-" + op
	var f flags
	fs := newFlagSet(op, &f, stderr)
	if done, code := cli.Parse(fs, &f.common, e.Args, stdout); done {
		return code
	}
	cfg, err := f.common.LoadConfig()
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if f.checkConfig {
		return checkconfig.Run(prog, &f.common, cfg, getenv, stdout, stderr)
	}
	if f.health {
		return healthCheck(prog, &f, cfg, stdout, stderr)
	}
	logs, code := openLogs(op, prog, &f, cfg, getenv, stderr)
	if logs == nil {
		return code
	}
	defer logs.Close()
	deadline := cli.Deadline(cfg)
	code, timedOut := cli.RunDeadline(deadline, func(ctx context.Context) int {
		return run(ctx, op, prog, &f, cfg, logs, getenv, stdout, stderr)
	})
	if timedOut {
		// A hung NVML call or file system: never hang slurmd. The reason
		// goes to syslog and the log file too, like any other failure.
		err := fmt.Errorf("deadline of %s passed (config general.deadline)", deadline)
		logs.Daemon.Error(op+" failed", "err", err)
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return code
}

// openLogs sets up a hook's logging: it logs info, or only warnings when the
// level is warn or error, or debug when asked for by name. Under slurmd
// stderr is the drain reason: only cli.Fail's line goes there. A dry run or
// a report writes nothing, the log file and syslog included. A nil result
// comes with the exit code of a bad level.
func openLogs(op, prog string, f *flags, cfg *config.Config, getenv func(string) string, stderr io.Writer) (*cli.Logs, int) {
	level := slog.LevelInfo
	if lvl, err := f.common.Level(cfg); err != nil {
		return nil, cli.Fail(stderr, prog, cli.ExitBadInput, err)
	} else if lvl > slog.LevelInfo {
		level = slog.LevelWarn
	}
	if f.common.LogLevel == "debug" || (f.common.LogLevel == "" && strings.EqualFold(cfg.General.LogLevel, "debug")) {
		level = slog.LevelDebug
	}
	underSlurm := getenv("SLURM_SCRIPT_CONTEXT") != ""
	readOnly := f.dryRun || f.report || f.held
	logFile := cfg.General.LogFile
	if readOnly {
		logFile = ""
	}
	logs := cli.SinkLogger(prog, logFile, level, underSlurm, readOnly, stderr)
	return &logs, cli.ExitOK
}

// run is one run of a hook program under the run's deadline: it chooses
// the fleet report (--report --from: no spool), this node's drift report
// (--report), or the hook itself, and returns its exit code.
func run(ctx context.Context, op, prog string, f *flags, cfg *config.Config, logs *cli.Logs, getenv func(string) string, stdout, stderr io.Writer) int {
	if err := nodeModeFlags(f); err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	switch {
	case f.job != "":
		return jobReport(f, cfg, stdout, stderr, prog) // reads the job's evidence only
	case f.fleet.asked():
		return fleetReport(ctx, f, stdout, stderr, prog) // reads --from only: no spool
	case f.report:
		return report(op, prog, f, cfg, logs, stdout, stderr)
	case f.held:
		return held(prog, f, cfg, stdout, stderr) // reads the spool only
	case f.restoreAll:
		return restoreAll(ctx, prog, f, cfg, logs, stdout, failer(logs.Daemon, "restore-all", prog, stderr))
	}
	return runHook(ctx, op, prog, f, cfg, logs, getenv, stdout, stderr)
}

// runHook is the prolog or epilog itself: the job from Slurm's
// environment, the engine's run under the node lock (not for a dry run),
// and what becomes of its outcome (conclude).
func runHook(ctx context.Context, op, prog string, f *flags, cfg *config.Config, logs *cli.Logs, getenv func(string) string, stdout, stderr io.Writer) int {
	started := time.Now()
	fail := failer(logs.Daemon, op, prog, stderr)
	sp, code, err := openSpool(f, cfg)
	if err != nil {
		return fail(code, err)
	}
	defer sp.Close()
	job, err := jobFromEnvAndFlags(getenv, f)
	if err != nil {
		// Odd Slurm env is bad input, never a node problem.
		return fail(cli.ExitBadInput, err)
	}
	fail = failer(logs.Daemon.With("job", job.ID), op, prog, stderr)
	o, err := hookOptions(f, cfg, sp, job, logs, started)
	if err != nil {
		return fail(cli.ExitBadInput, err)
	}
	done, err := prepareEngine(ctx, f, sp, o)
	if err != nil {
		return fail(cli.ExitMismatch, err)
	}
	defer done()
	var out *hook.Outcome
	var runErr error
	if op == "prolog" {
		out, runErr = hook.Prolog(ctx, o)
	} else {
		out, runErr = hook.Epilog(ctx, o)
	}
	return conclude(op, prog, f, cfg, sp, o, out, runErr, stdout, fail)
}

// prepareEngine readies a run of the engine: systemd's units are confined
// through systemd (D-Bus) under the run's deadline, and, but in a dry run,
// the node lock is taken. done lets go of both.
func prepareEngine(ctx context.Context, f *flags, sp *state.Spool, o *hook.Options) (done func(), err error) {
	var closers []func()
	done = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if m := sdunits.New(ctx, o.Root); m != nil {
		o.Units = m
		closers = append(closers, m.Close)
	}
	if !f.dryRun {
		unlock, err := sp.Lock(ctx)
		if err != nil {
			done()
			return nil, fmt.Errorf("node lock: %w", err)
		}
		closers = append(closers, func() { unlock() })
	}
	return done, nil
}

// failer returns what a run calls on a failure: it logs the failure to the
// log file and syslog only (dlog), and prints it as the one stderr line:
// once on a terminal, the reason under slurmd. It returns the exit code.
func failer(dlog *slog.Logger, op, prog string, stderr io.Writer) func(code int, err error, attrs ...any) int {
	return func(code int, err error, attrs ...any) int {
		dlog.Error(op+" failed", append([]any{"err", err}, attrs...)...)
		return cli.Fail(stderr, prog, code, err)
	}
}

// openSpool opens the state dir (--state-dir, else general.state_dir):
// read-only for a dry run or a report, which create nothing. A failure comes
// with its exit code.
func openSpool(f *flags, cfg *config.Config) (*state.Spool, int, error) {
	dir := f.stateDir
	if dir == "" {
		dir = cfg.General.StateDir
	}
	open := state.Open
	if f.dryRun || f.report || f.held {
		open = state.OpenReadOnly // creates nothing; an absent spool is empty
	}
	if f.report {
		if err := reportDirExists(dir, f.stateDir != ""); err != nil {
			return nil, cli.ExitBadInput, err
		}
	}
	sp, err := open(dir)
	if err != nil {
		return nil, cli.ExitMismatch, err // it names the state dir
	}
	return sp, cli.ExitOK, nil
}

// hookOptions are the engine's options for the job: the GPU backend opened
// (an error is bad input), the node's Slurm name (slurm.NodeName).
func hookOptions(f *flags, cfg *config.Config, sp *state.Spool, job slurm.Job, logs *cli.Logs, started time.Time) (*hook.Options, error) {
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return nil, err
	}
	// No backend.Close(): nvmlShutdown costs 4.5 ms on the 2x H200 node and
	// process exit frees NVML anyway.
	gpu.Light(backend) // knobs need the job's GPUs, not the whole inventory
	node := job.NodeName
	if node == "" { // not under Slurm (--restore-all, a test by hand)
		node = slurm.NodeName(f.common.HostRoot(), "", os.Getenv)
	}
	return &hook.Options{Root: f.common.HostRoot(), Config: cfg, GPU: backend, Spool: sp, Job: job, Node: node, DryRun: f.dryRun, Log: logs.Log.With("job", job.ID), Started: started, Version: cmdenv.Version}, nil
}

// conclude does what becomes of the engine's outcome: the log, the metrics
// (not for a dry run), the plan table or JSON, and for a failure the drain
// (a node problem, not for a dry run) and the exit code.
func conclude(op, prog string, f *flags, cfg *config.Config, sp *state.Spool, o *hook.Options, out *hook.Outcome, runErr error, stdout io.Writer, fail func(int, error, ...any) int) int {
	logOutcome(o.Log, out, runErr)
	if !f.dryRun {
		recordMetrics(o.Root, cfg, sp, op, o.Node, time.Since(o.Started), runErr, out, o.Log)
	}
	if f.dryRun || f.common.JSON {
		printOutcome(stdout, out, f.common.JSON)
	}
	if runErr == nil {
		return cli.ExitOK
	}
	code := cli.ExitBadInput
	if hook.IsNodeError(runErr) {
		code = cli.ExitMismatch
		if !f.dryRun {
			maybeDrain(cfg, o.Node, prog+": "+runErr.Error(), o.Log)
		}
	}
	var attrs []any
	if out != nil {
		attrs = []any{"profile", out.Profile}
	}
	return fail(code, runErr, attrs...)
}

func usage(op string) string {
	if op == "prolog" {
		return `usage: gpuprep-prolog [flags]
       gpuprep-prolog --health [--json] [--gpu-backend procfs]

Slurm Prolog (Prolog= in slurm.conf): applies the job's tuning profile and
journals every previous value. The job comes from SLURM_JOB_ID, SLURM_JOB_USER,
SLURM_JOB_GPUS, SLURM_JOB_CONSTRAINTS and SLURM_JOB_COMMENT. Exit 0: the job
may run; 1: a node problem (first stderr line: the reason); 2: bad input.
--health runs the health checks read-only and prints them.`
	}
	return `usage: gpuprep-epilog [flags]
       gpuprep-epilog --report [--since 24h] [--json]
       gpuprep-epilog --report --from PATH [--from PATH ...] [--since 24h] [--top N] [--json]
       gpuprep-epilog --report --job ID [--from PATH ...] [--json]
       gpuprep-epilog --held [--json]
       gpuprep-epilog --restore-all [--force] [--dry-run]

Slurm Epilog (Epilog= in slurm.conf): records drift of every knob the prolog
set, and restores the node's baseline when the last job using a knob ends.
--report prints the drift history. With --from it prints a fleet summary of
drift files copied from many nodes instead (no spool is opened): each knob
that drifted, on which nodes, how often, when last, and the nodes with the
most records. PATH is a drift file (<node>.jsonl, <node>.drift.jsonl or
<node>/drift.jsonl), a node's directory holding drift.jsonl, or a directory
of <node>.jsonl files and <node>/ directories holding drift.jsonl (one level;
names starting with "." are left out). A record's own node wins over the
name; the evidence records among PATHs (<jobid>-<start>.json, or a
node's jobs/ directory) add each GPU's share of job time throttled and
its energy per GPU-hour. --report --job ID prints what job ID's GPUs did
on this node (energy, throttling, errors, settings, drift), so far while
it runs; anyone may run it, and the job's user can read their own job's
record; with --from it merges the job's parts collected from many nodes.
--held lists the jobs whose settings the node holds (exit 1 when any do:
the package's removal is refused then). --restore-all puts the node back
at its baseline: it releases the jobs that are over and refuses those that
still look alive, unless --force. Exit codes as for gpuprep-prolog.`
}

// jobFromEnvAndFlags reads the job from Slurm's environment, with the --job-*
// flags taking precedence (manual runs).
func jobFromEnvAndFlags(getenv func(string) string, f *flags) (slurm.Job, error) {
	over := map[string]string{"SLURM_JOB_ID": f.jobID, "SLURM_JOB_USER": f.jobUser, "SLURM_JOB_GPUS": f.jobGPUs,
		"SLURM_JOB_CONSTRAINTS": f.constraints, "SLURM_JOB_COMMENT": f.comment}
	job, err := slurm.JobFromEnv(func(k string) string {
		if v := over[k]; v != "" {
			return v
		}
		return getenv(k)
	})
	return job, namingFlag(err, over)
}
