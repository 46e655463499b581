package hook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Outcome is what a run did, for the log, --dry-run and --json.
type Outcome struct {
	Op       string        `json:"op"`
	Job      string        `json:"job"`
	Profile  string        `json:"profile,omitempty"`
	Source   string        `json:"profile_source,omitempty"`
	DryRun   bool          `json:"dry_run"`
	Changes  []plan.Change `json:"changes"`
	Holds    []plan.Hold   `json:"holds,omitempty"`
	Skipped  []plan.Skip   `json:"skipped,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	Drift    []DriftFound  `json:"drift,omitempty"`
	// Released are other jobs let go of because they are over although
	// their epilog never ran.
	Released []Released `json:"released,omitempty"`
	// Fallback says why the job runs with another profile than it asked
	// for (selection.unfit_profile); "" when it got its own.
	Fallback string `json:"fallback,omitempty"`
	// FallbackFrom is the profile the job asked for when it fell back.
	FallbackFrom string `json:"fallback_from,omitempty"`
	// MIG is the [mig] layout check of each of the job's GPUs that
	// [mig.layout] names (prolog only).
	MIG []MIGCheck `json:"mig,omitempty"`
	// MIGGres is the gres.conf Slurm needs after [mig] reconfigure changed
	// a layout; slurmd must reload it.
	MIGGres []string `json:"mig_gres,omitempty"`
	// Health is the [health] checks' report (health.go).
	Health *health.Report `json:"health,omitempty"`
	// Notices are what the job's user is told by srunwrap (notices.go);
	// NodeDescription is the node description written for srunwrap, or
	// "unchanged" (nodedesc.go). Prolog only.
	Notices         []string `json:"notices,omitempty"`
	NodeDescription string   `json:"node_description,omitempty"`
}

// DriftFound is a knob whose value changed under the job.
type DriftFound struct {
	ID       knob.ID    `json:"id"`
	Kind     string     `json:"kind"` // "drift" or "invariant"
	Expected knob.Value `json:"expected"`
	Found    knob.Value `json:"found"`
	Job      string     `json:"job,omitempty"` // set for a dead job's drift
}

// Prolog applies the job's profile: select it, finish an interrupted run,
// release dead jobs, read every knob the profile sets, plan, journal, apply,
// and record what the job holds for its epilog. With DryRun it plans and
// changes nothing. After a successful run it leaves for srunwrap the node
// description and the job's notices (nodedesc.go).
func Prolog(ctx context.Context, o *Options) (out *Outcome, err error) {
	defer func() { publish(o, out, err) }()
	sel := config.Select(o.Config, config.JobSelector{Constraints: o.Job.Constraints, Comment: o.Job.Comment})
	out, err = prologFor(ctx, o, sel, "")
	retry, how, ok := fallbackFor(o.Config, sel, err)
	if !ok {
		return out, err
	}
	// A user's choice never drains the node: the profile the job asked
	// for cannot be applied here, so fall back as the config says, and
	// keep the reason in the job's record.
	reason := fmt.Sprintf("profile %q cannot be applied on this node (%v); %s", sel.Profile, err, how)
	out2, err2 := prologFor(ctx, o, retry, reason)
	out2.Warnings = append([]string{reason}, out2.Warnings...)
	out2.Fallback = reason
	out2.FallbackFrom = sel.Profile
	return out2, err2
}

// prologFor is Prolog with the profile selected; fallback, when set, is why
// sel is not what the job asked for (kept in the job record).
func prologFor(ctx context.Context, o *Options, sel config.Selection, fallback string) (*Outcome, error) {
	out := &Outcome{Op: "prolog", Job: jobKey(o.Job), Profile: sel.Profile, Source: string(sel.Source), DryRun: o.DryRun, Warnings: sel.Warnings}
	prof, err := jobProfile(o, sel)
	if err != nil {
		return out, err
	}
	gpus, tuned, migDevs, known := prologGPUs(o, out)
	// Health too; only in the first attempt (a fallback runs no checks again).
	if fallback == "" {
		if err := checkHealth(ctx, o, out, "prolog", gpus, known); err != nil {
			return out, err
		}
	}
	where, fixMIG, err := checkMIGLayout(o, out, gpus, migDevs)
	if err != nil {
		return out, err
	}
	s, err := prepare(ctx, o, out, out.Job)
	if err != nil {
		return out, err
	}
	if fixMIG {
		// Under the node lock, with the other jobs' records read: a
		// GPU another job holds is never reconfigured.
		if err := reconfigureMIG(ctx, o, s, out, gpus, where); err != nil {
			if err = requestNotHonoured(ctx, o, s, out, gpus, where, err); err != nil {
				return out, err
			}
		}
	}
	before := s.jobs[out.Job]
	knobs, scopes, p := planProlog(o, s, out, prof, tuned, before)
	if sk, failed := p.Failed(); failed {
		return out, nodeErrorf("required knob %s", about(sk.ID, errors.New(sk.Reason)))
	}
	if o.DryRun {
		return out, nil
	}
	if err := checkDeadline(ctx, "applying the profile"); err != nil {
		return out, err
	}
	rec := &JobRecord{Job: out.Job, SLUID: o.Job.SLUID, User: o.Job.User, Profile: sel.Profile, Started: o.now(), BootID: s.bootID,
		Holds: p.Holds, Invariants: invariants(knobs, prof, scopes), Fallback: fallback}
	for _, g := range gpus {
		rec.GPUs = append(rec.GPUs, g.UUID)
	}
	return out, applyProlog(o, s, out, knobs, p, before, rec)
}

// jobProfile is the selected profile as this job gets it: without its
// required list when the selection drops it, and with mps on when the job
// asked for gres/mps and the profile leaves mps alone.
func jobProfile(o *Options, sel config.Selection) (config.Profile, error) {
	prof, err := o.Config.Profile(sel.Profile)
	if err != nil {
		return prof, fmt.Errorf("profile %q: %w", sel.Profile, err)
	}
	if sel.DropRequired {
		prof.Required = nil
	}
	if o.Job.MPS && !prof.Knobs.IsSet(mpsKnob) {
		// --gres=mps:N: Slurm schedules the share and leaves the daemon
		// to the prolog.
		prof.Knobs = prof.Knobs.With(mpsKnob, mpsOn())
		o.Log.Info("the job asked for gres/mps: mps = true for it", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", o.Job.MPSPercent)
	}
	return prof, nil
}

// prologGPUs finds the job's GPUs and, of them, the tuned ones whose knobs
// the profile sets; migDevs says the job's GPUs are MIG devices, known that
// they could be told. Why GPU knobs or the MIG check are skipped goes into
// out's warnings.
func prologGPUs(o *Options, out *Outcome) (gpus, tuned []gpu.Device, migDevs, known bool) {
	gpus, migDevs, warn := jobGPUs(o)
	if warn != "" {
		out.Warnings = append(out.Warnings, warn)
	}
	// tuned are the GPUs whose knobs the job's profile sets: not the GPUs
	// of MIG devices, whose settings other jobs on the same GPU share.
	tuned = gpus
	if migDevs {
		tuned = nil
		out.Warnings = append(out.Warnings, "GPU knobs skipped: the job's GPUs are MIG devices, and a GPU's settings are shared by every job on it")
	}
	if o.GPU != nil && o.GPU.Name() == "none" && len(o.Job.GPUs) > 0 {
		out.Warnings = append(out.Warnings, "GPU knobs skipped: the GPU backend is none (GPUs ignored)")
	}
	// The MIG layout is checked before anything is done: a mismatch
	// fails the prolog with nothing changed, unless [mig] reconfigure
	// may fix it.
	if warn != "" && o.Config.MIG.Configured() {
		out.Warnings = append(out.Warnings, "MIG layout not checked: the job's GPUs are not known")
	}
	return gpus, tuned, migDevs, warn == ""
}

// checkMIGLayout checks the [mig] layout of the job's GPUs, recording the
// checks in out. It returns where the layout applies and whether [mig]
// reconfigure is to fix a mismatch; an error is a mismatch it may not fix.
func checkMIGLayout(o *Options, out *Outcome, gpus []gpu.Device, migDevs bool) (config.MIGWhere, bool, error) {
	where := config.MIGWhere{Node: o.Node, Partition: o.Job.Partition}
	var reqWarn string
	where.Request, reqWarn = o.Config.MIGRequest(o.Job.Comment)
	if reqWarn != "" {
		out.Warnings = append(out.Warnings, reqWarn)
	}
	checks, migWarns, err := checkMIG(o, gpus, where)
	out.MIG = checks
	out.Warnings = append(out.Warnings, migWarns...)
	fixMIG := canReconfigureMIG(o, checks, err)
	if fixMIG && migDevs {
		// Slurm allocated the job's MIG devices from the present layout:
		// changing it would take them away.
		return where, false, &migError{node: &NodeError{Reason: err.Error() + "; not reconfigured: the job holds MIG devices of the present layout"}, refused: true}
	}
	if err != nil && !fixMIG {
		return where, false, err
	}
	return where, fixMIG, nil
}

// planProlog reads the knobs of the job's scopes and plans the profile over
// the node's state, recording the plan in out. before is the job's earlier
// record, if its prolog ran already: the plan then also covers what it held.
func planProlog(o *Options, s *spoolState, out *Outcome, prof config.Profile, tuned []gpu.Device, before *JobRecord) (map[string]knob.Knob, map[string]bool, *plan.Plan) {
	scopes := jobScopes(tuned)
	earlier, knobGPUs := map[string]bool{}, tuned
	if before != nil {
		// The job's prolog again (a requeue, a manual re-run): plan over
		// what it held, so that what it no longer holds is let go.
		knobGPUs = unionGPUs(tuned, gpusByUUID(o.devices(), before.GPUs))
		for _, h := range before.Holds {
			earlier[h.ID.String()] = true
		}
	}
	knobs := catalog(o, knobGPUs)
	st := s.nodeState()
	p := plan.ForJob(out.Job, observe(knobs, prof, scopes, earlier), st)
	rebaseProlog(knobs, st, p)
	out.Changes, out.Holds, out.Skipped = p.Changes, p.Holds, p.Skipped
	out.Warnings = append(out.Warnings, p.Warnings...)
	return knobs, scopes, p
}

// applyProlog carries out the plan p: it journals the changes, applies
// them, and records the node's baseline and the job's record rec, with what
// was done in out. A plan with no changes needs no journal (commitUnchanged).
func applyProlog(o *Options, s *spoolState, out *Outcome, knobs map[string]knob.Knob, p *plan.Plan, before, rec *JobRecord) error {
	node := s.node.clone()
	node.Baseline = p.State.Baseline
	if len(p.Changes) == 0 {
		return commitUnchanged(o, s, node, before, rec)
	}
	if err := writeJournal(o.Spool, &Journal{Op: opProlog, Job: out.Job, BootID: s.bootID, Started: o.now(), Changes: p.Changes, NodeBefore: s.node, JobBefore: before}); err != nil {
		return nodeErrorf("%v", err)
	}
	done, warns, undone, err := apply(o, knobs, p.Changes)
	if err != nil {
		if undone {
			_ = o.Spool.Remove(journalFile) // apply undid its own work
		}
		return err
	}
	out.Changes = done
	out.Warnings = append(out.Warnings, warns...)
	rec.Holds = keepDone(p.Holds, p.Changes, done)
	out.Holds = rec.Holds
	rec.Baseline = baselineOf(rec.Holds, node.Baseline)
	if err := commit(o.Spool, node, out.Job, rec); err != nil {
		return nodeErrorf("spool: %v", err)
	}
	return nil
}

// commitUnchanged records a prolog that changes no knob: no journal is
// needed. node.json goes first; a run killed before the job record leaves
// only baseline entries of knobs still at their baseline.
func commitUnchanged(o *Options, s *spoolState, node NodeFile, before, rec *JobRecord) error {
	rec.Baseline = baselineOf(rec.Holds, node.Baseline)
	if before != nil && reflect.DeepEqual(before.Holds, rec.Holds) && reflect.DeepEqual(before.GPUs, rec.GPUs) &&
		before.Profile == rec.Profile && maps.Equal(s.node.Baseline, node.Baseline) && !s.dirty {
		return nil // the same job's prolog again: nothing at all to do
	}
	if s.dirty || !maps.Equal(s.node.Baseline, node.Baseline) {
		if err := o.Spool.WriteJSON(nodeFile, node); err != nil {
			return nodeErrorf("spool: %v", err)
		}
	}
	if err := o.Spool.WriteJSON(jobFile(rec.Job), rec); err != nil {
		return nodeErrorf("spool: %v", err)
	}
	return nil
}

// observe reads every knob of the job's scopes (the node, its GPUs) that the
// profile sets, and what the profile wants of it, and the present value of
// the knobs in alsoRead (what the job held before). The reads run in
// parallel (readAll); no other knob is read.
func observe(knobs map[string]knob.Knob, prof config.Profile, scopes, alsoRead map[string]bool) []plan.Observed {
	var obs []plan.Observed
	var toRead []knob.Knob
	for _, k := range knobs {
		id := k.ID()
		setting, ok := prof.Knobs.Setting(id.Name)
		ok = ok && scopes[id.Scope]
		o := plan.Observed{ID: id, Required: prof.IsRequired(id.Name)}
		if c, ok := k.(knob.Conflicter); ok {
			o.OnConflict = c.Conflict
		}
		var derr error
		if ok {
			var d knob.Value
			d, derr = knob.DesiredIn(k, setting, prof.Knobs.Setting)
			switch {
			case errors.Is(derr, knob.ErrLeaveAlone):
				ok = false
			case derr != nil:
				o.DesiredErr = derr
			default:
				o.Desired, o.HasDesired = d, true
			}
		}
		if !ok && !alsoRead[id.String()] {
			continue
		}
		obs = append(obs, o)
		toRead = append(toRead, k)
	}
	vals, errs := readAll(toRead)
	for i := range obs {
		obs[i].Current, obs[i].Err = vals[i], errs[i]
	}
	return obs
}

// jobScopes are the knob scopes a job's profile applies to: the node and
// each of its GPUs.
func jobScopes(gpus []gpu.Device) map[string]bool {
	scopes := map[string]bool{knob.NodeScope: true}
	for _, g := range gpus {
		scopes[knob.GPUScope(g.UUID)] = true
	}
	return scopes
}

// invariants lists the values the config says must hold through the job
// (for example persistence stays on) in its scopes, checked by the epilog.
func invariants(knobs map[string]knob.Knob, prof config.Profile, scopes map[string]bool) []plan.Hold {
	var out []plan.Hold
	for _, key := range slices.Sorted(maps.Keys(knobs)) {
		k := knobs[key]
		setting, ok := prof.Invariants.Setting(k.ID().Name)
		if !ok || !scopes[k.ID().Scope] {
			continue
		}
		if v, err := knob.DesiredIn(k, setting, prof.Invariants.Setting); err == nil {
			out = append(out, plan.Hold{ID: k.ID(), Expected: v})
		}
	}
	return out
}

// keepDone leaves out of holds the optional changes that failed (and were
// put back): the job does not hold those.
func keepDone(holds []plan.Hold, planned, done []plan.Change) []plan.Hold {
	ok := map[string]bool{}
	for _, c := range done {
		ok[c.ID.String()] = true
	}
	failed := map[string]bool{}
	for _, c := range planned {
		if !ok[c.ID.String()] {
			failed[c.ID.String()] = true
		}
	}
	var out []plan.Hold
	for _, h := range holds {
		if !failed[h.ID.String()] {
			out = append(out, h)
		}
	}
	return out
}

// baselineOf copies the baseline of each held knob, for the job record.
func baselineOf(holds []plan.Hold, baseline map[string]knob.Value) map[string]knob.Value {
	out := map[string]knob.Value{}
	for _, h := range holds {
		if v, ok := baseline[h.ID.String()]; ok {
			out[h.ID.String()] = v
		}
	}
	return out
}

// unionGPUs is a followed by the devices of b not in a.
func unionGPUs(a, b []gpu.Device) []gpu.Device {
	out := append([]gpu.Device(nil), a...)
	for _, d := range b {
		dup := false
		for _, x := range a {
			dup = dup || x.UUID == d.UUID
		}
		if !dup {
			out = append(out, d)
		}
	}
	return out
}

// ShowValue is a knob value as people read it: "(none)" for the empty
// value (cstate_max_latency_us with no idle state disabled), which would
// print as nothing ("state3->"). JSON and the spool keep "".
func ShowValue[V ~string](v V) string {
	if v == "" {
		return "(none)"
	}
	return string(v)
}

// Summary is one line for the log: what changed.
func (out *Outcome) Summary() string {
	var parts []string
	for _, c := range out.Changes {
		parts = append(parts, fmt.Sprintf("%s %s->%s", c.ID, ShowValue(c.From), ShowValue(c.To)))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}
