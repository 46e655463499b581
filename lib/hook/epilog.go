package hook

import (
	"context"

	"gpuprep/lib/evidence"

	"gpuprep/lib/gpu"
	"gpuprep/lib/plan"
)

// Epilog checks every knob the job's prolog set against what it set (drift)
// and the config's invariants, then lets go of the job's knobs: a knob no
// other job holds goes back to its baseline. A job with no record (no
// prolog ran, or the epilog already ran) is a no-op: the epilog is
// idempotent. A killed epilog is finished by whatever runs next. The
// job's notices for srunwrap are removed whatever happens.
func Epilog(ctx context.Context, opts *Options) (*Outcome, error) {
	o := newRun(opts)
	defer forgetNotices(o)
	out := &Outcome{Op: "epilog", Job: jobKey(o.Job), DryRun: o.DryRun}
	s, err := prepare(ctx, o, out, out.Job)
	if err != nil {
		return out, err
	}
	// The jobs holding each GPU until now, this one included: its end
	// reads the Xids it made.
	holders := holdersOf(s.jobs)
	held := func() map[string][]string { return holders }
	rec := s.jobs[out.Job]
	if rec == nil {
		out.warn(plan.KindNode, "no prolog record for this job: nothing to check or restore")
		return out, checkHealth(ctx, o, out, "epilog", nil, len(o.Job.GPUs) == 0, held)
	}
	out.Profile = rec.Profile
	end := endEvidence(o, s, rec) // before restoring: the job's settings are still in force
	var ev *evidence.Record
	finished := func(found []DriftFound) *evidence.Record {
		if end != nil {
			r := finishedEvidence(o, rec, end, found)
			ev = &r
		}
		return ev
	}
	if err := releaseJob(ctx, o, s, rec, out, false, finished); err != nil {
		return out, err
	}
	// After the restore: a failing check never keeps the job's settings.
	err = checkHealth(ctx, o, out, "epilog", gpusByUUID(o.devices(), rec.GPUs), true, held)
	if ev != nil {
		recordedEvidence(o, ev, rec.Job, out)
	}
	return out, err
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
