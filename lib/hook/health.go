package hook

import (
	"context"
	"errors"
	"log/slog"

	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/plan"
	"gpuprep/lib/state"
)

// The health checks ([health], lib/health): the prolog runs the fast ones
// before it changes anything, like the MIG check, and a fatal failure is a
// node error that skips the profile fallback (healthError); warnings join
// the outcome's. A fatal Xid that stands against one of the job's GPUs
// (not cleared since) fails every prolog of a job on it. The epilog runs
// the post-job ones after it restored the node, so a failing check never
// keeps a job's settings in place; it judges only new Xids. Both read the
// kernel log every run, so an Xid is read soon after the driver logs it.

// SpoolHolders gives the jobs holding each GPU now, from the spool's job
// records (health.Options.Holders of the prolog, whose checks run before
// it reads the spool under the node lock and whose own job has no record
// yet, and of gpuprep-health); a record that cannot be read leaves the
// Xids unattributed, with a warning.
func SpoolHolders(sp *state.Spool, log *slog.Logger) func() map[string][]string {
	return func() map[string][]string {
		h, err := GPUHolders(sp)
		if err != nil {
			log.Warn("new Xids not attributed to jobs", "err", err)
			return nil
		}
		return h
	}
}

// healthError is a fatal health failure: a node error (exit 1, Slurm
// drains the node) that the user-profile fallback leaves alone.
type healthError struct{ node *NodeError }

func (e *healthError) Error() string { return e.node.Reason }
func (e *healthError) Unwrap() error { return e.node }

// isHealthError says whether err is a fatal health failure.
func isHealthError(err error) bool {
	var he *healthError
	return errors.As(err, &he)
}

// checkHealth runs op's health checks ("prolog" or "epilog") on the job's
// GPUs (every GPU when the job has GPUs but which ones is unknown; none for
// a job without GPUs) and records the report in out; new Xids are
// attributed to the jobs holders gives. A dry run reads the state and
// writes nothing.
func checkHealth(ctx context.Context, o *run, out *Outcome, op string, gpus []gpu.Device, known bool, holders func() map[string][]string) error {
	h := o.Config.Health
	if op == "prolog" && !h.Prolog || op == "epilog" && !h.Epilog {
		return nil
	}
	models, err := health.LoadModels(h.ModelFile)
	if err != nil {
		return err // the admin's file: bad input, not the node's problem
	}
	scope := gpus
	switch {
	case !known && len(o.Job.GPUs) > 0:
		scope = nil // every GPU
	case scope == nil:
		scope = []gpu.Device{}
	}
	rep, err := health.Run(ctx, health.Options{Op: op, Root: o.Root, GPU: o.GPU, Health: h, Models: models, GPUs: scope,
		Spool: o.Spool, ReadOnly: o.DryRun, JobID: jobKey(o.Job), JobSLUID: o.Job.SLUID, Holders: holders, Log: o.Log})
	out.Health = rep // also when the state was not saved: the report is whole
	if err != nil {
		// A state the hook cannot save fails it (the node drains with the
		// reason): unlike gpuprep-health, which acts and then reports it,
		// a hook never goes on without its record of what it read.
		return nodeErrorf("health: %v", err)
	}
	for _, w := range rep.Warnings() {
		out.warn(plan.KindNode, "%s", health.ReasonPrefix+w.CodedReason())
	}
	if reason := rep.Reason(); reason != "" {
		return &healthError{node: &NodeError{Reason: reason}}
	}
	return nil
}
