package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
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
	since       time.Duration
}

// Main is gpuprep-prolog's and gpuprep-epilog's main: op is "prolog" or
// "epilog". It reads the job from Slurm's environment (flags override it for
// manual runs), runs under one deadline, and returns the exit code: 0 the
// job may run, 1 a node problem (the first stderr line is the reason), 2 bad
// input.
func Main(op string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	prog := "gpuprep-" + op
	var f flags
	fs := cli.NewFlagSet(prog, usage(op), stderr)
	f.common.Register(fs)
	fs.StringVar(&f.stateDir, "state-dir", "", "spool directory (default: the config's, /var/lib/gpuprep)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan and change nothing")
	fs.BoolVar(&f.checkConfig, "check-config", false, "validate the configuration and exit 0 (valid) or 2")
	fs.StringVar(&f.jobID, "job-id", "", "job id (default SLURM_JOB_ID)")
	fs.StringVar(&f.jobUser, "job-user", "", "job user (default SLURM_JOB_USER)")
	fs.StringVar(&f.jobGPUs, "job-gpus", "", "job GPU indices, e.g. 0,1 (default SLURM_JOB_GPUS)")
	fs.StringVar(&f.constraints, "constraints", "", "job constraints (default SLURM_JOB_CONSTRAINTS)")
	fs.StringVar(&f.comment, "comment", "", "job comment (default SLURM_JOB_COMMENT)")
	if op == "epilog" {
		fs.BoolVar(&f.report, "report", false, "print the drift history and exit")
		fs.DurationVar(&f.since, "since", 0, "with --report: only records newer than this (e.g. 24h)")
	}
	if done, code := cli.Parse(fs, &f.common, args, stdout); done {
		return code
	}
	cfg, err := f.common.LoadConfig()
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if f.checkConfig {
		for _, name := range cfg.ProfileNames() {
			if _, err := cfg.Profile(name); err != nil {
				return cli.Fail(stderr, prog, cli.ExitBadInput, err)
			}
		}
		fmt.Fprintf(stdout, "%s: %s is valid (%d profiles)\n", prog, cfg.File, len(cfg.Profiles))
		return cli.ExitOK
	}
	deadline := cfg.General.Deadline
	if deadline <= 0 {
		deadline = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- run(ctx, op, prog, &f, cfg, getenv, stdout, stderr) }()
	select {
	case c := <-code:
		return c
	case <-ctx.Done():
		// A hung NVML call or file system: never hang slurmd.
		time.Sleep(200 * time.Millisecond)
		select {
		case c := <-code:
			return c
		default:
		}
		return cli.Fail(stderr, prog, cli.ExitMismatch, fmt.Errorf("deadline of %s passed (config general.deadline)", deadline))
	}
}

func run(ctx context.Context, op, prog string, f *flags, cfg *config.Config, getenv func(string) string, stdout, stderr io.Writer) int {
	started := time.Now()
	level := slog.LevelInfo
	if lg, err := f.common.Logger(io.Discard, cfg); err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	} else if !lg.Enabled(ctx, slog.LevelInfo) {
		level = slog.LevelWarn
	}
	if f.common.LogLevel == "debug" || (f.common.LogLevel == "" && strings.EqualFold(cfg.General.LogLevel, "debug")) {
		level = slog.LevelDebug
	}
	underSlurm := getenv("SLURM_SCRIPT_CONTEXT") != ""
	log, closeLog := newLogger(prog, cfg.General.LogFile, level, underSlurm, stderr)
	defer closeLog()

	dir := f.stateDir
	if dir == "" {
		dir = cfg.General.StateDir
	}
	sp, err := state.Open(dir)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, fmt.Errorf("state dir: %w", err))
	}
	defer sp.Close()
	if f.report {
		return report(sp, f, stdout, stderr, prog)
	}
	job, err := jobFromEnvAndFlags(getenv, f)
	if err != nil {
		// Odd Slurm env is bad input, never a node problem.
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	// No backend.Close(): nvmlShutdown costs 4.5 ms on the 2x H200 node and
	// process exit frees NVML anyway.
	gpu.Light(backend) // knobs need the job's GPUs, not the whole inventory
	node := job.NodeName
	if node == "" {
		node, _ = os.Hostname()
	}
	o := &Options{Root: f.common.HostRoot(), Config: cfg, GPU: backend, Spool: sp, Job: job, Node: node, DryRun: f.dryRun, Log: log.With("job", job.ID), Started: started}
	var out *Outcome
	var runErr error
	if !f.dryRun {
		unlock, err := sp.Lock(ctx)
		if err != nil {
			return cli.Fail(stderr, prog, cli.ExitMismatch, fmt.Errorf("node lock: %w", err))
		}
		defer unlock()
	}
	if op == "prolog" {
		out, runErr = Prolog(ctx, o)
	} else {
		out, runErr = Epilog(ctx, o)
	}
	logOutcome(o.Log, out, runErr)
	if !f.dryRun {
		writeMetrics(cfg, sp, op, time.Since(started), runErr, out, o.Log)
	}
	if f.dryRun || f.common.JSON {
		printOutcome(stdout, out, f.common.JSON)
	}
	if runErr != nil {
		code := cli.ExitBadInput
		if IsNodeError(runErr) {
			code = cli.ExitMismatch
			maybeDrain(cfg, node, prog+": "+runErr.Error(), o.Log)
		}
		return cli.Fail(stderr, prog, code, runErr)
	}
	return cli.ExitOK
}

func usage(op string) string {
	if op == "prolog" {
		return `usage: gpuprep-prolog [flags]

Slurm Prolog (Prolog= in slurm.conf): applies the job's tuning profile and
journals every previous value. The job comes from SLURM_JOB_ID, SLURM_JOB_USER,
SLURM_JOB_GPUS, SLURM_JOB_CONSTRAINTS and SLURM_JOB_COMMENT. Exit 0: the job
may run; 1: a node problem (first stderr line: the reason); 2: bad input.`
	}
	return `usage: gpuprep-epilog [flags]
       gpuprep-epilog --report [--since 24h] [--json]

Slurm Epilog (Epilog= in slurm.conf): records drift of every knob the prolog
set, and restores the node's baseline when the last job using a knob ends.
--report prints the drift history. Exit codes as for gpuprep-prolog.`
}

// jobFromEnvAndFlags reads the job from Slurm's environment, with the --job-*
// flags taking precedence (manual runs).
func jobFromEnvAndFlags(getenv func(string) string, f *flags) (slurm.Job, error) {
	over := map[string]string{"SLURM_JOB_ID": f.jobID, "SLURM_JOB_USER": f.jobUser, "SLURM_JOB_GPUS": f.jobGPUs,
		"SLURM_JOB_CONSTRAINTS": f.constraints, "SLURM_JOB_COMMENT": f.comment}
	return slurm.JobFromEnv(func(k string) string {
		if v := over[k]; v != "" {
			return v
		}
		return getenv(k)
	})
}

func logOutcome(log *slog.Logger, out *Outcome, err error) {
	if out == nil {
		return
	}
	for _, w := range out.Warnings {
		log.Warn(w)
	}
	for _, s := range out.Skipped {
		log.Info("knob skipped", "knob", s.ID.String(), "reason", s.Reason)
	}
	for _, d := range out.Drift {
		attrs := []any{"knob", d.ID.String(), "kind", d.Kind, "expected", string(d.Expected), "found", string(d.Found)}
		if d.Job != "" {
			attrs = append(attrs, "dead_job", d.Job)
		}
		log.Warn("drift", attrs...)
	}
	verb := "applied"
	if out.Op == "epilog" {
		verb = "restored"
	}
	if out.DryRun {
		verb = "would change"
	}
	if err != nil {
		log.Error(out.Op+" failed", "err", err, "profile", out.Profile)
		return
	}
	log.Info(out.Op+" done", "profile", out.Profile, verb, out.Summary())
}

func printOutcome(w io.Writer, out *Outcome, asJSON bool) {
	if out == nil {
		return
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return
	}
	writePlanTable(w, out)
}
