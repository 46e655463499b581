package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/plan"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// [mig] reconfigure = true: the prolog changes a mismatched GPU to its
// expected layout, only when that is safe, and never reports a layout it
// did not read back. It is not a knob: the layout is the node's intended
// state, not a job's tuning, so the epilog does not put the old one back.
// A prolog killed half-way leaves a layout that the next prolog finds
// mismatched and reconfigures again.

// canReconfigureMIG says whether checkMIG's error is only layout
// mismatches that [mig] reconfigure may fix: not an unreadable GPU.
func canReconfigureMIG(o *run, checks []MIGCheck, err error) bool {
	if err == nil || !o.Config.MIG.Reconfigure || !isMIGError(err) {
		return false
	}
	return !slices.ContainsFunc(checks, func(c MIGCheck) bool { return c.Unreadable })
}

// reconfigureMIG changes each mismatched GPU of out.MIG to its expected
// layout, under the node lock (s is the spool as this run sees it). Every
// GPU is first checked to be safe to change: the backend can change MIG,
// no other job holds the GPU, no process uses it. If any is not, nothing
// is changed and the prolog fails with each reason. Then each is changed
// and read back; one that does not verify fails the prolog. In a dry run
// it says what it would do. After a change it records the gres.conf lines
// Slurm now needs in out.MIGGres and warns that slurmd must reload them.
func reconfigureMIG(ctx context.Context, o *run, s *spoolState, out *Outcome, gpus []gpu.Device, w config.MIGWhere) error {
	mc, canSet := gpu.As[gpu.MIGConfigurer](o.GPU)
	mr, _ := gpu.As[gpu.MIGReader](o.GPU)
	byIndex := map[int]gpu.Device{}
	for _, d := range gpus {
		byIndex[d.Index] = d
	}
	var refused []string
	var todo []int // positions in out.MIG
	for i, c := range out.MIG {
		if c.OK {
			continue
		}
		why := ""
		if !canSet {
			why = fmt.Sprintf("the GPU backend %s cannot change MIG", o.GPU.Name())
		} else {
			why = migRefusal(mc, s, out.Job, byIndex[c.GPU], o, w)
		}
		if why != "" {
			refused = append(refused, c.Reason+"; not reconfigured: "+why)
			continue
		}
		todo = append(todo, i)
	}
	if len(refused) > 0 {
		return &migError{node: &NodeError{Reason: strings.Join(refused, "; ")}, refused: true}
	}
	if o.DryRun {
		for _, i := range todo {
			out.MIG[i].Reconfigure = "would reconfigure"
		}
		return nil
	}
	var failed []string
	var changed []int
	for _, i := range todo {
		if err := checkDeadline(ctx, "reconfiguring MIG"); err != nil {
			return err
		}
		c := out.MIG[i]
		d := byIndex[c.GPU]
		want, _, _ := migWanted(o, d, w)
		o.Log.Info("reconfiguring MIG", "gpu", d.Index, "bus_id", d.BusID, "from", c.Found, "to", c.Want)
		if err := mc.SetMIGLayout(d.Index, want); err != nil {
			failed = append(failed, fmt.Sprintf("MIG reconfigure on GPU %d (%s) to %s failed: %v", d.Index, d.BusID, c.Want, err))
			continue
		}
		changed = append(changed, d.Index)
		st, err := mr.MIG(d.Index)
		if err != nil {
			failed = append(failed, fmt.Sprintf("MIG reconfigure on GPU %d (%s): cannot read the layout back: %v", d.Index, d.BusID, err))
			continue
		}
		v := compareMIG(d, want, st)
		if !v.OK {
			failed = append(failed, fmt.Sprintf("MIG reconfigure on GPU %d (%s) did not verify: want %s, read back %s", d.Index, d.BusID, c.Want, v.Found))
			continue
		}
		v.From, v.Reconfigure, v.Was = c.From, "reconfigured", c.Found
		out.MIG[i] = v
	}
	if len(changed) > 0 {
		lines, err := gresLinesAfterMIG(o, changed)
		if err != nil {
			out.warn(plan.KindMIG, "MIG layout changed on GPU %s: slurmd must reload gres.conf, but its lines could not be made: %v", textfmt.JoinInts(changed, ", "), err)
		} else {
			out.MIGGres = lines
			out.warn(plan.KindMIG, "MIG layout changed on GPU %s: Slurm needs the gres.conf below (gpuprep-gres prints it); write it and restart slurmd so that it reloads them", textfmt.JoinInts(changed, ", "))
		}
		o.Log.Warn("MIG layout changed: slurmd must reload gres.conf", "gpus", textfmt.JoinInts(changed, ", "), "gres", strings.Join(out.MIGGres, "\n"))
	}
	if len(failed) > 0 {
		return &migError{node: &NodeError{Reason: strings.Join(failed, "; ")}}
	}
	return nil
}

// migRefusal says why GPU d must not be reconfigured now ("" when it may):
// its layout cannot be made on it, another job's record holds it, or
// processes use it (the backend's ProcessLister: NVML's running compute
// and graphics processes, MIG devices included when run as root).
func migRefusal(mc gpu.MIGConfigurer, s *spoolState, self string, d gpu.Device, o *run, w config.MIGWhere) string {
	want, _, _ := migWanted(o, d, w)
	if err := mc.CheckMIGLayout(d.Index, want); err != nil {
		return "it cannot have that layout: " + err.Error()
	}
	for _, job := range s.jobOrder() {
		if job != self && slices.Contains(s.jobs[job].GPUs, d.UUID) {
			return "job " + job + " holds it"
		}
	}
	pl, ok := gpu.As[gpu.ProcessLister](o.GPU)
	if !ok {
		return "the GPU backend cannot tell whether a process uses it"
	}
	pids, err := pl.Processes(d.Index)
	if err != nil {
		return fmt.Sprintf("cannot tell whether a process uses it: %v", err)
	}
	if len(pids) > 0 {
		slices.Sort(pids)
		ids := make([]string, len(pids))
		for i, p := range pids {
			ids[i] = fmt.Sprint(p)
		}
		return "in use by process " + strings.Join(ids, ", ")
	}
	return ""
}

// gresLinesAfterMIG is the gres.conf gpuprep-gres would now print, with
// the MIG state of the changed GPUs read again (the inventory listed them
// before the change).
func gresLinesAfterMIG(o *run, changed []int) ([]string, error) {
	node, err := topo.Discover(o.Root, o.GPU, topo.Options{})
	if err != nil {
		return nil, err
	}
	mr, _ := gpu.As[gpu.MIGReader](o.GPU)
	for i := range node.GPUs {
		if slices.Contains(changed, node.GPUs[i].Index) {
			if node.GPUs[i].MIG, err = mr.MIG(node.GPUs[i].Index); err != nil {
				return nil, err
			}
		}
	}
	res, err := gresgen.Plan(node, gresgen.OptionsFromConfig(o.Config, config.Auto, o.Node))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := gresconf.Format(&b, nil, "off", res.SlurmDevices()); err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n"), nil
}

// requestNotHonoured handles reconfigureMIG's error err for a job that
// requested a layout: a request that cannot be made now (a GPU is busy)
// is the user's choice, which never drains the node, so the job runs on
// the node's own layout (checked, and reconfigured if need be) with a
// warning. Without a request, or for a real failure, err stands.
func requestNotHonoured(ctx context.Context, o *run, s *spoolState, out *Outcome, gpus []gpu.Device, w config.MIGWhere, err error) error {
	var me *migError
	if w.Request == "" || !errors.As(err, &me) || !me.refused {
		return err
	}
	out.tell(plan.KindMIG, "MIG layout %q requested but not made (%s); using the node's", w.Request, err)
	w.Request = ""
	checks, warns, err := checkMIG(o, gpus, w)
	out.MIG = checks
	out.warnAll(plan.KindMIG, warns)
	if !canReconfigureMIG(o, checks, err) {
		return err
	}
	return reconfigureMIG(ctx, o, s, out, gpus, w)
}
