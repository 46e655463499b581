package hook

import (
	"errors"

	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
	"gpuprep/lib/plan"
)

// What the prolog leaves for srunwrap under /run/gpuprep (lib/nodedesc):
// the node description, rewritten only when something in it changed, and
// the job's notices for its user. Neither is the node's problem: srunwrap
// falls back to sysfs without the description, and a failure to write
// either is a warning, never a drain.

// publish runs after a prolog (deferred, with its result): it lists the
// job's notices in out, and unless the run failed or is a dry run writes
// the node description when needed and the notice file through the run
// directory prepare opened (root's 0755; one another user owned or could
// write, with anything planted in it, was moved aside then: rundir.go), a
// jobs directory no better moved aside now. It closes the run directory.
func publish(o *run, out *Outcome, err error) {
	defer closeRunDir(o)
	if out == nil || err != nil {
		return
	}
	out.Notices = jobNotices(o, out)
	if o.DryRun {
		return
	}
	out.NodeDescription = writeNodeDescription(o)
	if werr := nodedesc.WriteNoticeIn(o.rd.dir, o.Root, nodedesc.Notice{Job: o.Job.ID, Messages: out.Notices}); werr != nil {
		o.Log.Warn("job notices for srunwrap not written", "err", werr)
		out.warn(plan.KindNode, "job notices not written: %v", werr)
	}
	noteMoved(o, out)
}

// writeNodeDescription writes the node description when NeedsWrite says so:
// one file read and a comparison when nothing changed. It returns what
// became of it for the outcome: the path written, "unchanged", or "" when
// it could not be written.
func writeNodeDescription(o *run) string {
	boot, err := host.ReadBootID(o.Root)
	if err != nil {
		// A description srunwrap cannot tie to this boot would be stale
		// at once.
		o.Log.Debug("no boot id: node description not written", "err", err)
		return ""
	}
	old, lerr := nodedesc.Load(o.Root)
	set := descSettings(o)
	need, why := nodedesc.NeedsWrite(old, lerr, boot, o.devices(), set, o.Version)
	if !need {
		return "unchanged"
	}
	d, err := nodedesc.Build(o.Root, o.GPU, set, o.Version)
	if err == nil {
		err = nodedesc.WriteIn(o.rd.dir, o.Root, d)
	}
	if err != nil {
		o.Log.Warn("node description for srunwrap not written; srunwrap reads sysfs instead", "err", err)
		return ""
	}
	if errors.Is(lerr, nodedesc.ErrMissing) {
		o.Log.Debug("node description written", "path", nodedesc.Path, "why", why)
	} else {
		o.Log.Info("node description written", "path", nodedesc.Path, "why", why)
	}
	return nodedesc.Path
}

// forgetNotices removes the job's notices after its epilog (idempotent),
// and closes the run directory.
func forgetNotices(o *run) {
	defer closeRunDir(o)
	if o.DryRun {
		return
	}
	if err := nodedesc.RemoveNoticeIn(o.rd.dir, o.Root, o.Job.ID); err != nil {
		o.Log.Warn("job notices not removed", "err", err)
	}
}

// descSettings is what the node description carries of the configuration,
// and Slurm's GPU order from gres.conf.
func descSettings(o *run) nodedesc.Settings {
	c := o.Config
	if c == nil {
		return nodedesc.Settings{}
	}
	return nodedesc.Settings{Srunwrap: c.Srunwrap, NCCL: c.NCCL, ConfigFile: c.File, SlurmGPUs: slurmGPUMinors(o)}
}
