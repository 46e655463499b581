package hook

import (
	"context"
	"fmt"

	"gpuprep/lib/drift"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Epilog checks every knob the job's prolog set against what it set (drift)
// and the config's invariants, then lets go of the job's knobs: a knob no
// other job holds goes back to its baseline. A job with no record (no
// prolog ran, or the epilog already ran) is a no-op: the epilog is
// idempotent.
func Epilog(ctx context.Context, o *Options) (*Outcome, error) {
	out := &Outcome{Op: "epilog", Job: jobKey(o.Job), DryRun: o.DryRun}
	if !o.DryRun {
		if err := recoverInterrupted(ctx, o); err != nil {
			return out, err
		}
	}
	rec, err := loadJob(o.Spool, out.Job)
	if err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	if rec == nil {
		out.Warnings = append(out.Warnings, "no prolog record for this job: nothing to check or restore")
		return out, nil
	}
	out.Profile = rec.Profile
	st, err := loadNode(o.Spool)
	if err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	dropStale(o, &st, out.Job)
	knobs := catalog(o, gpusByUUID(allGPUs(o), rec.GPUs))
	current := map[string]knob.Value{}
	for _, h := range append(append([]plan.Hold(nil), rec.Holds...), rec.Invariants...) {
		k, ok := knobs[h.ID.String()]
		if !ok {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: knob no longer present", h.ID))
			continue
		}
		v, err := k.Read()
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %v", h.ID, err))
			continue
		}
		current[h.ID.String()] = v
	}
	for _, h := range rec.Holds {
		if v, ok := current[h.ID.String()]; ok && plan.Drifted(h.Expected, v) {
			out.Drift = append(out.Drift, DriftFound{ID: h.ID, Kind: "drift", Expected: h.Expected, Found: v})
		}
	}
	for _, h := range rec.Invariants {
		if v, ok := current[h.ID.String()]; ok && plan.Drifted(h.Expected, v) {
			out.Drift = append(out.Drift, DriftFound{ID: h.ID, Kind: "invariant", Expected: h.Expected, Found: v})
		}
	}
	p := plan.Release(out.Job, rec.Holds, current, defaults(o, knobs), st)
	out.Changes, out.Skipped = p.Changes, p.Skipped
	out.Warnings = append(out.Warnings, p.Warnings...)
	if o.DryRun {
		return out, nil
	}
	if err := recordDrift(o, rec, out.Drift); err != nil {
		o.Log.Error("drift records not written", "err", err)
	}
	if err := checkDeadline(ctx, "restoring the node"); err != nil {
		return out, err
	}
	if err := writeJournal(o.Spool, &Journal{Op: "epilog", Job: out.Job, Started: o.now(), Changes: p.Changes, NodeBefore: st, JobBefore: rec}); err != nil {
		return out, nodeErrorf("%v", err)
	}
	var failed []string
	for _, c := range p.Changes {
		crashPoint()
		if err := knobs[c.ID.String()].Apply(c.To); err != nil {
			failed = append(failed, about(c.ID, err))
		}
	}
	if len(failed) > 0 {
		// Keep going (every other knob was restored), keep the job record
		// and node state so a retry can finish, and report the node.
		_ = o.Spool.Remove(journalFile)
		return out, nodeErrorf("restore failed: %v", failed)
	}
	if err := commit(o.Spool, p.State, out.Job, nil); err != nil {
		return out, nodeErrorf("spool: %v", err)
	}
	if len(p.Skipped) > 0 {
		return out, nodeErrorf("cannot restore %s: %s", p.Skipped[0].ID, p.Skipped[0].Reason)
	}
	return out, nil
}

// gpusByUUID picks the job's GPUs by UUID (indexes may differ after a reboot).
func gpusByUUID(all []gpu.Device, uuids []string) []gpu.Device {
	var out []gpu.Device
	for _, u := range uuids {
		for _, d := range all {
			if d.UUID == u {
				out = append(out, d)
			}
		}
	}
	return out
}

// defaults are the config's [defaults], turned into knob values, by knob
// name: what a knob is restored to when no baseline was recorded.
func defaults(o *Options, knobs map[string]knob.Knob) map[string]knob.Value {
	out := map[string]knob.Value{}
	for _, k := range knobs {
		if s, ok := knob.Setting(o.Config.Defaults, k.ID().Name); ok {
			if v, err := k.Desired(s); err == nil {
				out[k.ID().Name] = v
			}
		}
	}
	return out
}

func recordDrift(o *Options, rec *JobRecord, found []DriftFound) error {
	if len(found) == 0 {
		return nil
	}
	recs := make([]drift.Record, len(found))
	for i, f := range found {
		recs[i] = drift.Record{Time: o.now(), Node: o.Node, Job: rec.Job, User: rec.User, Knob: f.ID.Name,
			Scope: f.ID.Scope, Expected: string(f.Expected), Found: string(f.Found), Kind: f.Kind}
	}
	return drift.Append(o.Spool, recs)
}
