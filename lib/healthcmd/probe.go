package healthcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/probe"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// ProbeLock is the spool lock a probe holds while it runs: its own, not
// the node lock the hooks share (a probe takes seconds to minutes), and
// not HealthCheckLock (gpuprep-health's checks go on meanwhile, and leave
// the probe's drain alone while this lock is held).
const ProbeLock = "probe.lock"

// ProbingReason is the drain reason of a node a probe runs on.
const ProbingReason = health.DrainPrefix + "probing"

// probeDeadline bounds a whole --probe run: the probes (under 10 s per
// GPU by default), the drain and resume, and the health run after.
const probeDeadline = 10 * time.Minute

// errNotNow marks a node a probe may not run on now (a job holds it, an
// admin drained it): not a failure of the node.
var errNotNow = errors.New("not probed now")

// probeRun is what one --probe run found and did, for --json.
type probeRun struct {
	Node    string         `json:"node"`
	Probed  bool           `json:"probed"`
	Why     string         `json:"why,omitempty"` // why not probed
	Drained bool           `json:"drained_for_probe"`
	Refused []refusedGPU   `json:"refused,omitempty"`
	Verdict *probe.Verdict `json:"verdict,omitempty"`
	Health  *healthRun     `json:"health,omitempty"`
}

// refusedGPU is a GPU the probe left alone, and why.
type refusedGPU struct {
	Index int    `json:"index"`
	BusID string `json:"bus_id"`
	Why   string `json:"why"`
}

// probeProgram is gpuprep-health --probe: on a node no job can use (it
// drains an idle one itself, reason ProbingReason), it probes the GPUs no
// process uses (--force: those too), saves the verdict in the spool, and
// then runs the health checks, which act on it: a failed verdict drains
// the node with the finding's code, a passing one lifts the probe's drain
// (and a drain for an earlier probe's finding).
func probeProgram(ctx context.Context, prog string, f *healthFlags, cfg *config.Config, log *slog.Logger, getenv func(string) string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		log.Error("probe failed", "err", err)
		return cli.Fail(stderr, prog, code, err)
	}
	if euid() != 0 {
		return fail(cli.ExitBadInput, errors.New("--probe: root only (it drains the node, pins memory and loads the GPUs)"))
	}
	models, err := health.LoadModels(cfg.Health.ModelFile)
	if err != nil {
		return fail(cli.ExitBadInput, err)
	}
	sp, err := state.Open(stateDir(f, cfg))
	if err != nil {
		return fail(cli.ExitMismatch, err)
	}
	defer sp.Close()
	run := &probeRun{Node: slurm.NodeName(f.common.HostRoot(), f.node, getenv)}
	unlock, err := sp.TryLock(ProbeLock)
	if errors.Is(err, state.ErrLocked) {
		run.Why = "another probe is running: " + err.Error()
		return concludeProbe(f, run, cli.ExitOK, log, stdout)
	} else if err != nil {
		return fail(cli.ExitMismatch, err)
	}
	err = probeNode(ctx, f, cfg, models, sp, run, log)
	unlock() // the health run below decides on the drain: no probe runs now
	if errors.Is(err, errNotNow) {
		return concludeProbe(f, run, cli.ExitOK, log, stdout)
	} else if err != nil {
		code := fail(cli.ExitMismatch, err)
		releaseProbeDrain(ctx, run, log)
		return code
	}
	run.Health = &healthRun{}
	code := healthProgramWith(ctx, prog, f, cfg, log, getenv, run.Health, io.Discard, stderr)
	return concludeProbe(f, run, max(code, verdictCode(run.Verdict)), log, stdout)
}

// checkProbeFlags checks that --probe is not mixed with what it cannot be.
func checkProbeFlags(f *healthFlags) error {
	switch {
	case f.force && !f.probe:
		return errors.New("--force goes with --probe")
	case f.probe && (f.dryRun || f.clear != "" || f.explain != ""):
		return errors.New("--probe cannot be combined with --dry-run, --clear or --explain")
	}
	return nil
}

// stateDir is --state-dir, else the config's.
func stateDir(f *healthFlags, cfg *config.Config) string {
	if f.stateDir != "" {
		return f.stateDir
	}
	return cfg.General.StateDir
}

// verdictCode is the exit code a verdict calls for: 1 when it failed.
func verdictCode(v *probe.Verdict) int {
	if v != nil && !v.Pass {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}

// probeNode claims the node (claimNode), probes its GPUs and saves the
// verdict. errNotNow: the node may not be probed now (run.Why says why).
func probeNode(ctx context.Context, f *healthFlags, cfg *config.Config, models health.Models, sp *state.Spool, run *probeRun, log *slog.Logger) error {
	if err := claimNode(ctx, f, sp, run, log); err != nil {
		return err
	}
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return err
	}
	defer backend.Close()
	v, err := measure(ctx, f, cfg, models, backend, run, log)
	if err != nil {
		return err
	}
	run.Verdict, run.Probed = v, true
	if err := sp.WriteJSON(probe.VerdictFile, v); err != nil {
		return fmt.Errorf("probe verdict not saved: %w", err)
	}
	logVerdict(log, v)
	return nil
}

// logVerdict logs the verdict and each finding.
func logVerdict(log *slog.Logger, v *probe.Verdict) {
	for _, x := range v.Findings {
		log.Error("probe finding", "code", x.Code, "gpu", x.GPU, "bus_id", x.BusID, "reason", x.Reason)
	}
	log.Info("probe done", "pass", v.Pass, "findings", len(v.Findings), "gpus", len(v.Result.GPUs),
		"seconds", fmt.Sprintf("%.1f", v.Result.Seconds), "forced", v.Forced)
}

// concludeProbe prints the run (--json: as JSON) and returns code.
func concludeProbe(f *healthFlags, run *probeRun, code int, log *slog.Logger, stdout io.Writer) int {
	if !run.Probed {
		log.Info("node not probed", "node", run.Node, "why", run.Why)
	}
	if f.common.JSON {
		cli.WriteJSON(stdout, run)
		return code
	}
	writeProbeRun(stdout, run)
	return code
}
