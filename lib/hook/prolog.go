package hook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// Prolog applies the job's profile: select it, finish an interrupted run,
// release dead jobs, read every knob the profile sets, plan, journal, apply,
// and record what the job holds for its epilog. With DryRun it plans and
// changes nothing. After a successful run it leaves for srunwrap the node
// description and the job's notices (nodedesc.go).
func Prolog(ctx context.Context, opts *Options) (out *Outcome, err error) {
	o := newRun(opts)
	defer func() { publish(o, out, err) }()
	sel := config.Select(o.Config, o.selector())
	o.asked = sel
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
	out2.Warnings = append([]plan.Warning{plan.Tell(plan.KindProfile, "%s", reason)}, out2.Warnings...)
	out2.Fallback = reason
	out2.FallbackFrom = sel.Profile
	return out2, err2
}

// selector is what the job says about the profile it wants.
func (o *run) selector() config.JobSelector {
	return config.JobSelector{Constraints: o.Job.Constraints, Comment: o.Job.Comment, MPS: o.Job.MPS}
}

// prologJob is what a prolog resolved about its job: the profile as the
// job gets it, its GPUs and where the [mig] layout applies.
type prologJob struct {
	sel      config.Selection
	fallback string // why sel is not what the job asked for; "" when it is
	prof     config.Profile
	// gpus are the job's GPUs; tuned, of them, those whose knobs the
	// profile sets (none for MIG devices); known says gpus could be told.
	gpus, tuned []gpu.Device
	migDevs     bool
	known       bool
	// migs are the UUIDs of the job's MIG devices (migScopes): the knobs
	// that apply to MIG devices (mps) are set in their scopes.
	migs   []string
	where  config.MIGWhere
	fixMIG bool // [mig] reconfigure is to fix the layout
}

// prologFor is Prolog with the profile selected; fallback, when set, is why
// sel is not what the job asked for (kept in the job record). Its phases:
// resolve the job, check the node before anything is done, plan under the
// node lock, execute the plan.
func prologFor(ctx context.Context, o *run, sel config.Selection, fallback string) (*Outcome, error) {
	out := &Outcome{Op: "prolog", Job: jobKey(o.Job), Profile: sel.Profile, Source: string(sel.Source), DryRun: o.DryRun}
	out.warnAll(plan.KindProfile, sel.Warnings)
	j, err := resolveJob(o, out, sel, fallback)
	if err != nil {
		return out, err
	}
	if err := preflight(ctx, o, out, j); err != nil {
		return out, err
	}
	s, err := prepare(ctx, o, out, out.Job)
	if err != nil {
		return out, err
	}
	if err := fixMIGLayout(ctx, o, s, out, j); err != nil {
		return out, err
	}
	before := s.jobs[out.Job]
	knobs, p := planProlog(o, s, out, j, before)
	if sk, failed := p.Failed(); failed {
		return out, nodeErrorf("required knob %s", about(sk.ID, errors.New(sk.Reason)))
	}
	if o.DryRun {
		return out, nil
	}
	if err := checkDeadline(ctx, "applying the profile"); err != nil {
		return out, err
	}
	rec := jobRecord(o, s, out, j, knobs, p)
	if err := applyProlog(o, s, out, knobs, p, before, rec); err != nil {
		return out, err
	}
	if rec.Evidence != nil {
		writeEvidence(o, evidenceRecord(o, rec), out)
	}
	return out, nil
}

// resolveJob resolves the profile the job gets (config.JobProfile) and
// its GPUs.
func resolveJob(o *run, out *Outcome, sel config.Selection, fallback string) (*prologJob, error) {
	j := &prologJob{sel: sel, fallback: fallback}
	prof, implied, err := o.Config.JobProfile(sel)
	if err != nil {
		return nil, err
	}
	for _, m := range implied {
		o.Log.Info("profile setting implied by the job's request", "setting", m, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", o.Job.MPSPercent)
	}
	j.prof = prof
	j.gpus, j.tuned, j.migDevs, j.known = prologGPUs(o, out)
	j.migs = migScopes(o, out, j)
	return j, nil
}

// preflight checks the node before anything is done: health (in the first
// attempt only: a fallback runs no checks again) and the [mig] layout.
func preflight(ctx context.Context, o *run, out *Outcome, j *prologJob) error {
	if j.fallback == "" {
		if err := checkHealth(ctx, o, out, "prolog", j.gpus, j.known, SpoolHolders(o.Spool, o.Log)); err != nil {
			return err
		}
	}
	var err error
	j.where, j.fixMIG, err = checkMIGLayout(o, out, j.gpus, j.migDevs)
	return err
}

// fixMIGLayout makes the [mig] layout where reconfigure may: under the
// node lock, with the other jobs' records read, so a GPU another job holds
// is never reconfigured.
func fixMIGLayout(ctx context.Context, o *run, s *spoolState, out *Outcome, j *prologJob) error {
	if !j.fixMIG {
		return nil
	}
	err := reconfigureMIG(ctx, o, s, out, j.gpus, j.where)
	if err != nil {
		err = requestNotHonoured(ctx, o, s, out, j.gpus, j.where, err)
	}
	return err
}

// jobRecord is what the job's record keeps for its epilog.
func jobRecord(o *run, s *spoolState, out *Outcome, j *prologJob, knobs map[string]knob.Knob, p *plan.Plan) *JobRecord {
	rec := &JobRecord{Job: out.Job, SLUID: o.Job.SLUID, User: o.Job.User, UID: o.Job.UID, Profile: j.sel.Profile, Started: o.now(), BootID: s.bootID,
		Holds: p.Holds, Invariants: invariants(knobs, j.prof, j.scopes()), Fallback: j.fallback}
	for _, g := range j.gpus {
		rec.GPUs = append(rec.GPUs, g.UUID)
	}
	return rec
}

// prologGPUs finds the job's GPUs and, of them, the tuned ones whose knobs
// the profile sets; migDevs says the job's GPUs are MIG devices, known that
// they could be told. Why GPU knobs or the MIG check are skipped goes into
// out's warnings.
func prologGPUs(o *run, out *Outcome) (gpus, tuned []gpu.Device, migDevs, known bool) {
	gpus, migDevs, warn := jobGPUs(o)
	if warn != "" {
		out.warn(plan.KindGPUs, "%s", warn)
	}
	// tuned are the GPUs whose knobs the job's profile sets: not the GPUs
	// of MIG devices, whose settings other jobs on the same GPU share.
	tuned = gpus
	if migDevs {
		tuned = nil
		out.tell(plan.KindGPUs, "GPU knobs skipped: the job's GPUs are MIG devices, and a GPU's settings are shared by every job on it (mps, if set, runs a daemon per MIG device)")
	}
	if o.GPU != nil && o.GPU.Name() == "none" && len(o.Job.GPUs) > 0 {
		out.tell(plan.KindGPUs, "GPU knobs skipped: the GPU backend is none (GPUs ignored)")
	}
	// The MIG layout is checked before anything is done: a mismatch
	// fails the prolog with nothing changed, unless [mig] reconfigure
	// may fix it.
	if warn != "" && o.Config.MIG.Configured() {
		out.warn(plan.KindMIG, "MIG layout not checked: the job's GPUs are not known")
	}
	return gpus, tuned, migDevs, warn == ""
}

// checkMIGLayout checks the [mig] layout of the job's GPUs, recording the
// checks in out. It returns where the layout applies and whether [mig]
// reconfigure is to fix a mismatch; an error is a mismatch it may not fix.
func checkMIGLayout(o *run, out *Outcome, gpus []gpu.Device, migDevs bool) (config.MIGWhere, bool, error) {
	where := config.MIGWhere{Node: o.Node, Partition: o.Job.Partition}
	var reqWarn string
	where.Request, reqWarn = o.Config.MIGRequest(o.Job.Comment)
	if reqWarn != "" {
		out.warn(plan.KindMIG, "%s", reqWarn)
	}
	checks, migWarns, err := checkMIG(o, gpus, where)
	out.MIG = checks
	out.warnAll(plan.KindMIG, migWarns)
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
func planProlog(o *run, s *spoolState, out *Outcome, j *prologJob, before *JobRecord) (map[string]knob.Knob, *plan.Plan) {
	earlier, knobGPUs := map[string]bool{}, j.knobGPUs()
	if before != nil {
		// The job's prolog again (a requeue, a manual re-run): plan over
		// what it held, so that what it no longer holds is let go.
		knobGPUs = unionGPUs(knobGPUs, gpusByUUID(o.devices(), before.GPUs))
		for _, h := range before.Holds {
			earlier[h.ID.String()] = true
		}
	}
	o.settings = j.prof.Knobs.Setting
	knobs := catalog(o, knobGPUs)
	p := plan.ForJob(out.Job, observe(knobs, j.prof, j.scopes(), earlier), s.nodeState())
	out.Changes, out.Holds, out.Skipped = p.Changes, p.Holds, p.Skipped
	out.Warnings = append(out.Warnings, p.Warnings...)
	return knobs, p
}

// applyProlog carries out the plan p: it journals the changes, applies
// them, and records the node's baseline and the job's record rec, with what
// was done in out. A plan with no changes needs no journal (commitUnchanged).
func applyProlog(o *run, s *spoolState, out *Outcome, knobs map[string]knob.Knob, p *plan.Plan, before, rec *JobRecord) error {
	node := s.node.clone()
	node.Baseline = p.State.Baseline
	if len(p.Changes) == 0 {
		startEvidence(o, s, rec)
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
	out.warnAll(plan.KindKnob, warns)
	rec.Holds = keepDone(p.Holds, p.Changes, done)
	out.Holds = rec.Holds
	rec.Baseline = baselineOf(rec.Holds, node.Baseline)
	startEvidence(o, s, rec) // after applying: the job's settings are in force
	if err := commit(o.Spool, node, out.Job, rec); err != nil {
		return nodeErrorf("spool: %v", err)
	}
	return nil
}

// commitUnchanged records a prolog that changes no knob: no journal is
// needed. node.json goes first; a run killed before the job record leaves
// only baseline entries of knobs still at their baseline.
func commitUnchanged(o *run, s *spoolState, node NodeFile, before, rec *JobRecord) error {
	rec.Baseline = baselineOf(rec.Holds, node.Baseline)
	if before != nil && reflect.DeepEqual(before.Holds, rec.Holds) && reflect.DeepEqual(before.GPUs, rec.GPUs) &&
		before.Profile == rec.Profile && maps.Equal(s.node.Baseline, node.Baseline) && !s.dirty {
		rec.Evidence, rec.EvidenceShared = before.Evidence, before.EvidenceShared
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
		o, wanted := want(k, prof, scopes)
		if !wanted && !alsoRead[o.ID.String()] {
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

// want is knob k as the planner sees it, but for its present value: what
// the profile wants of it, and what its definition declares (part-wise,
// one job's value excluding another's). wanted is false where the profile
// leaves it alone in these scopes.
func want(k knob.Knob, prof config.Profile, scopes map[string]bool) (o plan.Observed, wanted bool) {
	id := k.ID()
	o = observed(id)
	o.Required = prof.IsRequired(id.Name)
	setting, ok := prof.Knobs.Setting(id.Name)
	if !ok || !scopes[id.Scope] {
		return o, false
	}
	d, err := k.Desired(setting)
	switch {
	case errors.Is(err, knob.ErrLeaveAlone):
		return o, false
	case err != nil:
		o.DesiredErr = err
	default:
		o.Desired, o.HasDesired = d, true
	}
	return o, true
}

// observed is the knob id for the planner, with what its definition
// declares (knob.Def's PartWise and GoWithout).
func observed(id knob.ID) plan.Observed {
	d, _ := knob.Lookup(id.Name)
	return plan.Observed{ID: id, Parts: d.PartWise, GoWithout: d.GoWithout}
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

// scopes are the knob scopes the job's profile applies to: the node, each
// tuned GPU, and each of the job's MIG devices (whose scope holds only
// the knobs that apply to MIG devices: mps).
func (j *prologJob) scopes() map[string]bool {
	scopes := jobScopes(j.tuned)
	for _, u := range j.migs {
		scopes[knob.GPUScope(u)] = true
	}
	return scopes
}

// knobGPUs are the GPUs whose knobs the catalog builds: the tuned ones,
// and the GPUs of the job's MIG devices, whose MIG scopes come with them
// (knob.Catalog); only j.scopes() are planned.
func (j *prologJob) knobGPUs() []gpu.Device {
	if len(j.migs) > 0 {
		return unionGPUs(j.tuned, j.gpus)
	}
	return j.tuned
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
		if v, err := k.Desired(setting); err == nil {
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
