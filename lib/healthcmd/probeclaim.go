package healthcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// probeRunning says whether a probe holds ProbeLock now.
func probeRunning(sp *state.Spool) bool {
	if sp.ReadOnly() {
		return false
	}
	unlock, err := sp.TryLock(ProbeLock)
	if err != nil {
		return errors.Is(err, state.ErrLocked)
	}
	unlock()
	return false
}

// decide is the health run's decision on the node: health.Decide, except
// for a node drained for a probe (ProbingReason): left alone while the
// probe runs; after it, drained with the finding when a check fails, else
// resumed.
func decide(run *healthRun) health.Decision {
	if run.nsErr != nil || run.ns.Reason != ProbingReason || !run.ns.Drained() {
		return health.Decide(run.Health, run.ns, run.nsErr == nil)
	}
	if run.probing {
		return health.Decision{Action: health.Nothing, Why: "a probe is running (drained: " + ProbingReason + ")"}
	}
	if fatal := run.Health.Fatal(); len(fatal) > 0 {
		reason := health.DrainReason(fatal)
		return health.Decision{Action: health.Drain, Reason: reason, Why: reason}
	}
	return health.Decision{Action: health.Resume, Why: "every check passes; lifting the probe's drain (" + ProbingReason + ")"}
}

// claimNode makes sure no job holds the node or can start on it while the
// probe runs: no job holds gpuprep's settings, and (unless --no-drain,
// where the caller answers for it) Slurm shows the node drained by
// gpuprep, or idle, when it drains it itself (ProbingReason) and checks
// again that no job slipped in. errNotNow when it may not probe.
func claimNode(ctx context.Context, f *healthFlags, sp *state.Spool, run *probeRun, log *slog.Logger) error {
	notNow := func(why string) error {
		run.Why = why
		return errNotNow
	}
	jobs, err := hook.JobsHeld(sp)
	if err != nil {
		return err
	}
	if len(jobs) > 0 {
		return notNow("job " + strings.Join(jobs, ", ") + " holds the node")
	}
	if f.noDrain {
		return nil
	}
	ns, err := showNode(ctx, run.Node)
	if err != nil {
		return fmt.Errorf("the node's state in Slurm (a probe needs it idle): %w", err)
	}
	switch {
	case ns.Busy():
		return notNow("Slurm shows the node " + ns.State)
	case ns.Drained() && !health.OwnsDrain(ns.Reason):
		return notNow(fmt.Sprintf("drained by someone else (%q): left alone", ns.Reason))
	case ns.Drained():
		return nil // gpuprep's own drain: no job can start
	}
	return drainForProbe(ctx, run, log)
}

// drainForProbe drains the idle node with ProbingReason, then asks again:
// a job that started in between makes it lift the drain and not probe.
func drainForProbe(ctx context.Context, run *probeRun, log *slog.Logger) error {
	sctx, cancel := context.WithTimeout(ctx, scontrolTimeout)
	err := slurmCtl.drain(sctx, run.Node, ProbingReason)
	cancel()
	if err != nil {
		return fmt.Errorf("drain for the probe: %w", err)
	}
	run.Drained = true
	log.Info("node drained for a probe", "node", run.Node, "reason", ProbingReason)
	ns, err := showNode(ctx, run.Node)
	if err == nil && !ns.Busy() && ns.Drained() {
		return nil
	}
	releaseProbeDrain(ctx, run, log)
	if err != nil {
		return fmt.Errorf("the node's state after draining it: %w", err)
	}
	run.Why = "a job started as the node was drained (" + ns.State + ")"
	return errNotNow
}

// releaseProbeDrain lifts the probe's own drain after a run that did not
// get to the health checks (a refusal, an error).
func releaseProbeDrain(ctx context.Context, run *probeRun, log *slog.Logger) {
	if !run.Drained {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scontrolTimeout)
	defer cancel()
	if err := slurmCtl.resume(sctx, run.Node); err != nil {
		log.Warn("the probe's drain could not be lifted; the next gpuprep-health run lifts it", "node", run.Node, "err", err)
		return
	}
	run.Drained = false
	log.Info("probe's drain lifted", "node", run.Node)
}

// showNode is scontrol show node within scontrolTimeout.
func showNode(ctx context.Context, node string) (slurm.NodeState, error) {
	sctx, cancel := context.WithTimeout(ctx, scontrolTimeout)
	defer cancel()
	return slurmCtl.show(sctx, node)
}
