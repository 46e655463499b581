package hook

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/knob"
	"gpuprep/lib/nodedesc"
)

// jobNotices lists, one line each, what the prolog did for the job that its
// user should know and has no other way to learn (srunwrap's local rank 0
// prints them): the profile it asked for and why it was not applied as
// asked, knobs of its profile skipped on this node or kept at another
// job's value, health checks that failed with warn severity, and a MIG
// layout request not honoured. Node matters for the admin (a reboot, dead
// jobs released) stay in the log.
func jobNotices(o *run, out *Outcome) []string {
	var msgs []string
	add := func(s string) {
		if s != "" && !slices.Contains(msgs, s) {
			msgs = append(msgs, s)
		}
	}
	for _, w := range o.asked.Warnings {
		add(w)
	}
	add(out.Fallback)
	_, reqWarn := o.Config.MIGRequest(o.Job.Comment)
	add(reqWarn)
	for _, s := range out.Skipped {
		reason, _ := strings.CutPrefix(s.Reason, s.ID.String()+": ")
		add(fmt.Sprintf("profile %q: %s skipped on this node: %s", out.Profile, s.ID.Name+scopeOf(s.ID), reason))
	}
	for _, w := range out.Warnings {
		if w.User {
			add(w.Text)
		}
	}
	if out.Health != nil {
		for _, r := range out.Health.Warnings() {
			add("health: " + r.Reason)
		}
	}
	return msgs
}

// scopeOf names a knob's scope for a user: "" for the node, " on GPU-..."
// for a GPU.
func scopeOf(id knob.ID) string {
	if uuid, ok := id.GPU(); ok {
		return " on " + uuid
	}
	return ""
}

// forgetJobNotices removes a released job's notices for srunwrap
// (/run/gpuprep/jobs/<id>, nodedesc.RemoveNotice, as the epilog does);
// a failure is a warning.
func forgetJobNotices(o *run, job string) {
	if o.DryRun {
		return
	}
	id, err := strconv.ParseUint(job, 10, 64)
	if err != nil {
		return // not a job id: no notice was ever written under it
	}
	if err := nodedesc.RemoveNoticeIn(o.rd.dir, o.Root, id); err != nil {
		o.Log.Warn("a released job's notices not removed", "dead_job", job, "err", err)
	}
}
