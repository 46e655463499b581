// Package healthcmd is the command line of gpuprep-health, slurmd's
// HealthCheckProgram: its flags, one deadline below slurmd's 60 s, the
// node's state from slurmctld, the checks (lib/health) under the node lock
// the hooks share, the drain or resume that follows, its metrics
// (metrics.go, through lib/textfile), its output and exit code
// (healthcmd.go); and --clear, an admin's end to a GPU's standing Xids
// (clear.go).
package healthcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"gpuprep/lib/checkconfig"
	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
	"gpuprep/lib/probefleet"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// HealthCheckLock is the spool lock that keeps two gpuprep-health runs apart
// (the node lock is the one it shares with the hooks).
const HealthCheckLock = "healthcheck.lock"

// healthProgramDeadline bounds a gpuprep-health run below the 60 s after
// which slurmd kills its HealthCheckProgram.
const healthProgramDeadline = 50 * time.Second

// scontrolTimeout bounds each scontrol call: right after boot slurmctld may
// not answer yet.
const scontrolTimeout = 10 * time.Second

// slurmCtl is how gpuprep-health asks slurmctld for the node's state and
// drains or resumes it: lib/slurm's scontrol calls (argv, no shell). Tests
// put a simulated node in its place.
var slurmCtl = struct {
	show   func(ctx context.Context, node string) (slurm.NodeState, error)
	drain  func(ctx context.Context, node, reason string) error
	resume func(ctx context.Context, node string) error
}{slurm.ShowNode, slurm.Drain, slurm.Resume}

type healthFlags struct {
	common   cli.Common
	stateDir string
	node     string
	dryRun   bool
	noDrain  bool
	probe    bool // --probe: measure the GPUs' speed
	force    bool // --force: probe GPUs other processes use
	// probeReport are the verdicts (files, folders) --probe-report
	// compares, margin how far below the fleet's median flags a GPU.
	probeReport []string
	margin      float64
	clear       string // --clear GPU|all
	reason      string // --reason TEXT, with --clear
	explain     string // --explain CODE|list
	checkConfig bool   // --check-config: hookcmd.CheckConfig
}

const healthUsage = `usage: gpuprep-health [flags]

Slurm HealthCheckProgram (slurm.conf: HealthCheckProgram=/usr/sbin/gpuprep-health,
HealthCheckInterval=300, HealthCheckNodeState=ANY,CYCLE): runs the prolog's
health checks on an idle or busy node, under the node lock it shares with
gpuprep-prolog and gpuprep-epilog (one Xid watermark: each Xid is new to one
run). A fatal failure drains the node with a reason that starts "gpuprep: ",
then the failure's code and what to do (its action class), and names the GPU
("gpuprep: XID79 reboot: GPU 0 (...): ..."; --explain CODE says more); a node gpuprep drained is resumed once every
check passes; a drain anyone else set is left alone. A fatal Xid stands
until its GPU is cleared: every run fails and drains a node that is not
drained (a failed scontrol is retried at the next run), and every prolog of
a job on that GPU fails. It is cleared by a reboot, by the driver's
recovery action (NVML) back to none after a reset, or by an admin:
gpuprep-health --clear GPU|all --reason TEXT (GPU: index, bus id or UUID;
root; who, what and why go to the log, the state and the metrics). A
recovery action other than none fails its GPU whatever the log says. For
[health] boot_grace after boot the checks that wait for daemons only warn.
[health] external_command runs only when the node is idle. It writes
gpuprep-health.prom for node_exporter. With --no-drain it leaves
draining to its caller (LBNL NHC: check_cmd_status -t 45 /usr/sbin/gpuprep-health
--no-drain). It decides and acts before a state it cannot save stops it:
that is reported (stderr, log, gpuprep_health_state_saved) with exit 1.
--probe (root) measures the GPUs' speed on a node no job can use (it
drains an idle one: "gpuprep: probing"), saves the verdict and acts on it;
--probe-report compares many nodes' verdicts. Exit 0: healthy (or another
gpuprep-health runs); 1: a fatal check failed, or the state could not be
saved; 2: bad input.`

// Main is gpuprep-health, slurmd's HealthCheckProgram. slurmd runs it
// with no arguments, SLURMD_NODENAME set, and kills it after 60 s. It
// checks the node (healthProgram) or, with --clear, clears a GPU's Xids
// (clearProgram), and returns the exit code.
func Main(e cli.Env) int {
	const prog = "gpuprep-health"
	var f healthFlags
	fs := newHealthFlagSet(&f, e.Stderr)
	if done, code := cli.Parse(fs, &f.common, e.Args, e.Stdout); done {
		return code
	}
	if f.explain != "" {
		return explainProgram(prog, f.explain, e.Stdout, e.Stderr)
	}
	if len(f.probeReport) > 0 {
		return probeReportProgram(prog, &f, e.Stdout, e.Stderr)
	}
	if err := checkProbeFlags(&f); err != nil {
		return cli.Fail(e.Stderr, prog, cli.ExitBadInput, err)
	}
	if err := checkClearFlags(&f); err != nil {
		return cli.Fail(e.Stderr, prog, cli.ExitBadInput, err)
	}
	cfg, err := f.common.LoadConfig()
	if err != nil {
		return cli.Fail(e.Stderr, prog, cli.ExitBadInput, err)
	}
	if f.checkConfig {
		// The configuration is the hooks': check it as they do, read-only.
		return checkconfig.Run(prog, &f.common, cfg, e.Getenv, e.Stdout, e.Stderr)
	}
	level, err := f.common.Level(cfg)
	if err != nil {
		return cli.Fail(e.Stderr, prog, cli.ExitBadInput, err)
	}
	logFile := cfg.General.LogFile
	if f.dryRun {
		logFile = ""
	}
	// slurmd throws HealthCheckProgram's output away: the log file and
	// syslog are where it is read.
	logs := cli.SinkLogger(prog, logFile, level, !isTerminal(e.Stderr), f.dryRun, e.Stderr)
	defer logs.Close()
	deadline := min(cli.Deadline(cfg), healthProgramDeadline)
	if f.probe {
		deadline = probeDeadline
	}
	code, timedOut := cli.RunDeadline(deadline, func(ctx context.Context) int {
		if f.probe {
			return probeProgram(ctx, prog, &f, cfg, logs.Log, e.Getenv, e.Stdout, e.Stderr)
		}
		if f.clear != "" {
			return clearProgram(ctx, prog, &f, cfg, logs.Log, e.Getenv, e.Stdout, e.Stderr)
		}
		return healthProgram(ctx, prog, &f, cfg, logs.Log, e.Getenv, e.Stdout, e.Stderr)
	})
	if timedOut {
		err := fmt.Errorf("deadline of %s passed (config general.deadline, at most %s under slurmd's 60 s)", deadline, healthProgramDeadline)
		if f.probe {
			err = fmt.Errorf("the probe's deadline of %s passed", deadline)
		}
		logs.Daemon.Error("health check failed", "err", err)
		return cli.Fail(e.Stderr, prog, cli.ExitMismatch, err)
	}
	return code
}

func newHealthFlagSet(f *healthFlags, stderr io.Writer) *pflag.FlagSet {
	fs := cli.NewFlagSet("gpuprep-health", healthUsage, stderr)
	f.common.Register(fs)
	fs.StringVar(&f.stateDir, "state-dir", "", "spool directory (default: the config's, /var/lib/gpuprep)")
	fs.BoolVar(&f.checkConfig, "check-config", false, "validate the configuration and check it against this node read-only, as gpuprep-prolog --check-config does; exit 0 (ok), 2 (invalid) or 1 (a prolog or health run here would fail)")
	fs.StringVar(&f.node, "node", "", "the node's Slurm name (default SLURMD_NODENAME, else slurm.conf's NodeName for this host, else the short host name)")
	fs.BoolVar(&f.noDrain, "no-drain", false, "leave draining and resuming to the caller (LBNL NHC's check_cmd_status): never call scontrol; exit 1 while a check fails fatally (a standing fatal Xid too)")
	fs.StringVar(&f.clear, "clear", "", "end the standing Xids of a GPU (its index, PCI bus id or UUID) or of \"all\", with --reason; root only; recorded in the log, the state and gpuprep-health.prom")
	fs.StringVar(&f.reason, "reason", "", "why the GPU is fit again (--clear): recorded with who cleared it")
	fs.StringVar(&f.explain, "explain", "", "print what a failure's code (the word after \"gpuprep: \" in a drain reason: XID79, PCIE_DEGRADED, ...) means and what to do about it, then exit; \"list\" lists every code")
	fs.BoolVar(&f.probe, "probe", false, "measure the GPUs' speed (root): drain an idle node (reason \"gpuprep: probing\"), probe every GPU no process uses, save the verdict, then run the checks, which resume the node or drain it with the finding's code")
	fs.BoolVar(&f.force, "force", false, "with --probe: probe GPUs other processes use too (the verdict says it was forced)")
	fs.StringSliceVar(&f.probeReport, "probe-report", nil, "compare many nodes' saved probe verdicts (files or folders of them, copies of each node's probe-verdict.json; repeat or comma-separate): per GPU model, flag the GPUs below the fleet's median by more than --margin and 3 robust deviations; reads files only")
	fs.Float64Var(&f.margin, "margin", probefleet.DefaultMargin, "with --probe-report: how far below the fleet's median (a fraction) flags a GPU")
	fs.BoolVar(&f.dryRun, "dry-run", false, "run the checks read-only and print what it would do to the node; change nothing (no lock, Xid watermark, drain, resume, metrics or log file)")
	return fs
}

// FlagSet is gpuprep-health's flag set for the man page generator.
func FlagSet() *pflag.FlagSet { return newHealthFlagSet(&healthFlags{}, io.Discard) }

// healthRun is what one gpuprep-health run found and did, for --json.
type healthRun struct {
	Node      string          `json:"node"`
	NodeState string          `json:"node_state,omitempty"`
	Reason    string          `json:"node_reason,omitempty"`
	Idle      bool            `json:"idle"`
	GraceLeft float64         `json:"boot_grace_left_seconds,omitempty"`
	Decision  health.Decision `json:"decision"`
	Done      bool            `json:"done"` // the decision was carried out (false on --dry-run or a scontrol failure)
	Health    *health.Report  `json:"health"`
	// StateError is why the health state could not be saved ("" when it
	// was, or on --dry-run): the run acted all the same.
	StateError string `json:"state_error,omitempty"`

	// ns is the node's state as slurmctld gave it; nsErr why it is not
	// known (not asked under --no-drain, or scontrol failed).
	ns    slurm.NodeState
	nsErr error
	// probing: a probe holds ProbeLock now (its drain is left alone).
	probing bool
}

// healthProgram is one gpuprep-health run that checks the node: the
// checks (checkNode), the drain or resume they call for (decideAndAct),
// the metrics (not for --dry-run), and what it prints and returns
// (conclude). Another gpuprep-health holding HealthCheckLock makes it
// stop at once, healthy.
func healthProgram(ctx context.Context, prog string, f *healthFlags, cfg *config.Config, log *slog.Logger, getenv func(string) string, stdout, stderr io.Writer) int {
	return healthProgramWith(ctx, prog, f, cfg, log, getenv, &healthRun{}, stdout, stderr)
}

// healthProgramWith is healthProgram filling run (a probe's health run
// after it probed, which waits for HealthCheckLock instead of stopping).
func healthProgramWith(ctx context.Context, prog string, f *healthFlags, cfg *config.Config, log *slog.Logger, getenv func(string) string, run *healthRun, stdout, stderr io.Writer) int {
	started := time.Now()
	fail := func(code int, err error) int {
		log.Error("health check failed", "err", err)
		return cli.Fail(stderr, prog, code, err)
	}
	models, err := health.LoadModels(cfg.Health.ModelFile)
	if err != nil {
		return fail(cli.ExitBadInput, err)
	}
	sp, release, err := openHealthSpool(ctx, f, cfg)
	if errors.Is(err, state.ErrLocked) {
		log.Info("another gpuprep-health is running; this one stops", "lock", err)
		return cli.ExitOK
	} else if err != nil {
		return fail(cli.ExitMismatch, err)
	}
	defer sp.Close()
	defer release()
	run.Node = slurm.NodeName(f.common.HostRoot(), f.node, getenv)
	saveErr, code, err := checkNode(ctx, f, cfg, models, sp, run, log)
	if err != nil {
		return fail(code, err)
	}
	run.probing = probeRunning(sp)
	decideAndAct(ctx, f, run, log)
	if !f.dryRun {
		drained := nodeDrained(run.nsErr == nil || run.Done, drainedAfter(run))
		recordHealthMetrics(f.common.HostRoot(), cfg, sp, run.Node, run.Health, drained, saveErr == nil, time.Since(started), log)
		startProbe(f, cfg, sp, run, log)
	}
	return conclude(prog, f, run, saveErr, log, stdout, stderr)
}

// checkNode runs the checks and puts what they found in run: the node's
// state and whether it is idle, the report (boot grace applied), and
// StateError. saveErr is why the health state could not be saved: the
// checks ran, and the run decides and acts on them all the same. A run
// that could not check comes with its exit code.
func checkNode(ctx context.Context, f *healthFlags, cfg *config.Config, models health.Models, sp *state.Spool, run *healthRun, log *slog.Logger) (saveErr error, code int, err error) {
	// Slurm is asked, and the external check run, before the node lock is
	// taken, and the node drained or resumed after it is released: a job's
	// prolog never waits for slurmctld or a diagnostic on gpuprep-health's
	// account.
	askSlurm(ctx, f, run, log)
	extra, err := idleChecks(ctx, f, cfg, sp, run)
	if err != nil {
		return nil, cli.ExitMismatch, err
	}
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return nil, cli.ExitBadInput, err
	}
	root := f.common.HostRoot()
	rep, saveErr := checkUnderLock(ctx, sp, f.dryRun, health.Options{Op: "health", Root: root, GPU: backend, Health: cfg.Health,
		Models: models, Spool: sp, ReadOnly: f.dryRun, Extra: extra, Holders: hook.SpoolHolders(sp, log), Log: log})
	if rep == nil {
		return nil, cli.ExitMismatch, saveErr
	}
	if saveErr != nil {
		// The checks ran: decide and act on them all the same; the next
		// run reads the same kernel log records again.
		run.StateError = saveErr.Error()
		log.Error("health state not saved: this run decides and acts all the same; the next run reads the same kernel log records again", "err", saveErr)
	}
	bootGrace(root, cfg, rep, run, log)
	run.Health = rep
	return saveErr, cli.ExitOK, nil
}

// conclude logs the run, prints it (--json: as JSON; else the checks'
// table and what it did to the node) and returns its exit code: 1 when a
// check failed fatally or the state could not be saved (that on stderr).
func conclude(prog string, f *healthFlags, run *healthRun, saveErr error, log *slog.Logger, stdout, stderr io.Writer) int {
	logHealth(log, run)
	if f.common.JSON {
		cli.WriteJSON(stdout, run)
	} else {
		writeHealthRun(stdout, run)
	}
	if saveErr != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, fmt.Errorf("the node was checked and acted on, but %w", saveErr))
	}
	if len(run.Health.Fatal()) > 0 {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}

// openHealthSpool opens the spool (read-only for --dry-run) and, unless
// --dry-run, takes HealthCheckLock: state.ErrLocked when another
// gpuprep-health holds it (after --probe it waits, until ctx ends). release frees the lock (a no-op otherwise).
func openHealthSpool(ctx context.Context, f *healthFlags, cfg *config.Config) (sp *state.Spool, release func() error, err error) {
	dir := stateDir(f, cfg)
	open := state.Open
	if f.dryRun {
		open = state.OpenReadOnly
	}
	if sp, err = open(dir); err != nil {
		return nil, nil, err
	}
	if f.dryRun {
		return sp, func() error { return nil }, nil
	}
	lock := sp.TryLock
	if f.probe {
		// After a probe: wait for a gpuprep-health run that holds the
		// lock (it leaves the probe's drain alone), then decide on it.
		lock = func(name string) (func() error, error) { return sp.LockNamed(ctx, name) }
	}
	if release, err = lock(HealthCheckLock); err != nil {
		sp.Close()
		return nil, nil, err
	}
	return sp, release, nil
}

// askSlurm reads the node's state with scontrol (not under --no-drain),
// within scontrolTimeout, and puts it in run; run.nsErr says why it is
// not known.
func askSlurm(ctx context.Context, f *healthFlags, run *healthRun, log *slog.Logger) {
	if f.noDrain {
		run.nsErr = errNoDrain
		return
	}
	sctx, cancel := context.WithTimeout(ctx, scontrolTimeout)
	run.ns, run.nsErr = slurmCtl.show(sctx, run.Node)
	cancel()
	if run.nsErr != nil {
		log.Warn("node state unknown: no drain or resume decision rests on it", "node", run.Node, "err", run.nsErr)
		return
	}
	run.NodeState, run.Reason = run.ns.State, run.ns.Reason
}

// idleChecks says whether the node is idle (no job holds gpuprep's
// settings, and Slurm does not list it busy) and, when it is (and not
// --dry-run), runs [health] external_command.
func idleChecks(ctx context.Context, f *healthFlags, cfg *config.Config, sp *state.Spool, run *healthRun) ([]health.Result, error) {
	jobs, err := hook.JobsHeld(sp)
	if err != nil {
		return nil, err
	}
	run.Idle = len(jobs) == 0 && (run.nsErr != nil || !run.ns.Busy())
	if run.Idle && !f.dryRun {
		return health.External(ctx, cfg.Health), nil
	}
	return nil, nil
}

// bootGrace turns the failures of checks that wait for daemons into
// warnings for [health] boot_grace after boot (/proc/uptime).
func bootGrace(root host.Root, cfg *config.Config, rep *health.Report, run *healthRun, log *slog.Logger) {
	up, err := health.Uptime(root)
	if err != nil {
		log.Debug("uptime unknown: no boot grace", "err", err)
		return
	}
	if left := cfg.Health.BootGrace - up; left > 0 {
		health.ApplyBootGrace(rep, left)
		run.GraceLeft = left.Seconds()
	}
}

// decideAndAct decides what to do to the node and, unless --dry-run or
// --no-drain, does it with scontrol.
func decideAndAct(ctx context.Context, f *healthFlags, run *healthRun, log *slog.Logger) {
	run.Decision = decide(run)
	if f.noDrain {
		run.Decision = health.Decision{Action: health.Nothing, Why: "--no-drain: the caller drains and resumes"}
	}
	if !f.dryRun && !f.noDrain {
		run.Done = act(ctx, run.Node, run.Decision, log)
	}
}

// drainedAfter says whether gpuprep's drain is on the node once run's
// decision was carried out.
func drainedAfter(run *healthRun) bool {
	switch {
	case run.Done && run.Decision.Action == health.Drain:
		return true
	case run.Done && run.Decision.Action == health.Resume:
		return false
	}
	return run.nsErr == nil && run.ns.Drained() && health.OwnsDrain(run.ns.Reason)
}

// errNoDrain is the node state's "error" under --no-drain: not asked.
var errNoDrain = errors.New("not asked (--no-drain)")

// checkUnderLock runs the checks under the node lock the hooks take (not
// for a dry run, which writes nothing): the Xid watermark, history and the
// debounce streaks are theirs too. The state is saved before the lock is
// released (a prolog may move the watermark right after), and before
// scontrol is run (which never waits under the lock): a report with an
// error is a state not saved, which the caller reports after acting.
func checkUnderLock(ctx context.Context, sp *state.Spool, dryRun bool, o health.Options) (*health.Report, error) {
	if !dryRun {
		unlock, err := sp.Lock(ctx)
		if err != nil {
			return nil, fmt.Errorf("node lock: %w", err)
		}
		defer unlock()
	}
	return health.Run(ctx, o)
}

// nodeDrained is gpuprep_node_drained's value: 1 or 0, -1 when unknown.
func nodeDrained(known, drained bool) int {
	switch {
	case !known:
		return -1
	case drained:
		return 1
	}
	return 0
}

// act carries out the decision with scontrol (argv, no shell, bounded);
// a failure is logged, never fatal: the next run decides again.
func act(ctx context.Context, node string, d health.Decision, log *slog.Logger) bool {
	if d.Action == health.Nothing {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, scontrolTimeout)
	defer cancel()
	var err error
	if d.Action == health.Drain {
		err = slurmCtl.drain(ctx, node, d.Reason)
	} else {
		err = slurmCtl.resume(ctx, node)
	}
	if err != nil {
		log.Warn("scontrol could not "+string(d.Action)+" the node; the next run retries while the check still fails", "node", node, "err", err, "why", d.Why)
		return false
	}
	log.Info("node "+string(d.Action)+"ed", "node", node, "why", d.Why)
	return true
}

func logHealth(log *slog.Logger, run *healthRun) {
	attrs := []any{"node", run.Node, "summary", run.Health.Summary(), "action", string(run.Decision.Action), "why", run.Decision.Why, "idle", run.Idle}
	standing := false
	for _, r := range run.Health.Fatal() {
		log.Error("health check failed", "check", r.Check, "scope", r.Scope, "reason", r.Reason)
		standing = standing || r.Check == "xid"
	}
	if standing {
		log.Warn("a fatal Xid or recovery action stands against the GPU until it is cleared: a reboot, the driver's recovery action back to none after a reset, or gpuprep-health --clear GPU --reason TEXT once the GPU is fit again")
	}
	for _, r := range run.Health.Warnings() {
		log.Warn("health check warning", "check", r.Check, "scope", r.Scope, "reason", r.Reason)
	}
	log.Info("health check done", attrs...)
}

// writeHealthRun prints the run for a person: the checks' table, then what
// it did or would do to the node.
func writeHealthRun(w io.Writer, run *healthRun) {
	run.Health.WriteTable(w)
	state := run.NodeState
	if state == "" {
		state = "state unknown (not asked, or scontrol did not answer)"
	}
	fmt.Fprintf(w, "node %s: %s", run.Node, state)
	if run.Reason != "" {
		fmt.Fprintf(w, ", reason %q", run.Reason)
	}
	if run.GraceLeft > 0 {
		fmt.Fprintf(w, ", boot grace %s left", (time.Duration(run.GraceLeft) * time.Second).Round(time.Second))
	}
	fmt.Fprintln(w)
	verb := "would " + string(run.Decision.Action)
	if run.Done {
		verb = string(run.Decision.Action) + "ed"
	} else if run.Decision.Action == health.Nothing {
		verb = "no change"
	}
	fmt.Fprintf(w, "%s: %s\n", verb, run.Decision.Why)
}

// isTerminal says whether w is a terminal (a person ran the command).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
