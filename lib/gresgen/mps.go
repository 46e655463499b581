package gresgen

import (
	"fmt"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/plural"
	"gpuprep/lib/topo"
)

// mpsName is Slurm's GRES name for GPUs shared through MPS (gres/mps).
const mpsName = "mps"

// planMPS makes the Name=mps records, one per whole GPU that
// Options.MPSGPUs marks (by index, model, or gres.conf type as written or
// as Slurm's autodetect names it; config.GPUSelection), each
// "Name=mps File=/dev/nvidia<minor> Count=<MPSCount>". Slurm's gres.conf(5)
// and gres.html ("MPS Management"): with File=, Count is that GPU's
// gres/mps; Type and Cores are not written, since slurmd copies them from
// the GPU's Name=gpu record of the same file. A GPU in MIG mode gets none
// (its gpu records are its MIG devices, which gpuprep-gres does not give
// gres/mps), with a warning; so does a selection that matches no GPU.
func planMPS(gpus []topo.GPU, opt Options, warns []Warning) ([]Device, []Warning) {
	if opt.MPSGPUs.None() {
		return nil, warns
	}
	count := uint64(opt.MPSCount)
	if count == 0 {
		count = config.DefaultMPSCount
	}
	var out []Device
	var mig []string
	for _, g := range gpus {
		gtype := TypeFor(g.Name, opt.TypeNames)
		if !opt.MPSGPUs.Matches(config.MIGGPU{Index: g.Index, Model: g.Name, Type: gtype}) &&
			!opt.MPSGPUs.Matches(config.MIGGPU{Index: g.Index, Type: SlurmType(g.Name)}) {
			continue
		}
		if g.MIG.Current {
			mig = append(mig, fmt.Sprintf("GPU %d (%s)", g.Index, g.BusID))
			continue
		}
		out = append(out, Device{Name: mpsName, File: fmt.Sprintf("/dev/nvidia%d", g.Minor), GPUIndex: g.Index, BusID: g.BusID, Count: count})
	}
	if len(mig) > 0 {
		warns = append(warns, Warning{
			Msg: fmt.Sprintf("no Name=mps record for %s in MIG mode: gpuprep-gres gives gres/mps to whole GPUs only", joinMax(mig, 3)),
			Fix: "disable MIG on the GPUs marked in [gres] mps_gpus, or leave them out of it",
		})
	}
	if len(out) == 0 && len(mig) == 0 {
		warns = append(warns, Warning{
			Msg: fmt.Sprintf("[gres] mps_gpus = %s marks none of this node's GPUs (%s): no Name=mps record", opt.MPSGPUs, gpuNames(gpus)),
			Fix: "mark GPUs by index, model or type as listed here, or \"all\"",
		})
	}
	return out, warns
}

// gpuNames lists the node's GPUs as mps_gpus may name them: "0 h100".
func gpuNames(gpus []topo.GPU) string {
	if len(gpus) == 0 {
		return "it has none"
	}
	var s []string
	for _, g := range gpus {
		s = append(s, fmt.Sprintf("%d %s", g.Index, SlurmType(g.Name)))
	}
	return joinMax(s, 4)
}

// mpsTotal is the node's gres/mps: the records' counts summed, the
// mps:<total> of the node line's Gres=.
func mpsTotal(mps []Device) uint64 {
	var n uint64
	for _, d := range mps {
		n += d.Count
	}
	return n
}

// mpsNote says what slurm.conf needs for the Name=mps records.
func (r *Result) mpsNote() string {
	gpu := "gpu"
	for _, g := range r.Node.Gres {
		if g.Name != mpsName {
			gpu = g.Name
			break
		}
	}
	return fmt.Sprintf("%s (Count=%d each, [gres] mps_gpus): slurm.conf needs GresTypes=%s,%s, the node's Gres= with %s:%d, and SelectType=select/cons_tres",
		plural.Count(len(r.MPS), "Name=mps record", "Name=mps records"), r.MPS[0].Count, gpu, mpsName, mpsName, mpsTotal(r.MPS))
}

// checkMPS compares gres.conf's Name=mps records for this node with the
// generated ones, by device file, where [gres] mps_gpus marks GPUs; with
// none marked, Name=mps records are the site's own and left alone.
func checkMPS(want *Result, conf *gresconf.Conf, opt Options) []Difference {
	if opt.MPSGPUs.None() {
		return nil
	}
	host := want.Node.NodeName
	if !conf.Names(host) && len(conf.NodeNames()) > 0 {
		return nil // checkGres says so
	}
	var diffs []Difference
	have := map[string]gresconf.Device{}
	for _, d := range conf.ForNode(host) {
		if !strings.EqualFold(d.Name, mpsName) {
			continue
		}
		key := strings.Join(d.DeviceFiles(), ",")
		if key == "" {
			diffs = append(diffs, Difference{Line: d.Line, Msg: fmt.Sprintf("Name=mps Count=%d without File=: Slurm spreads it over every GPU, but [gres] mps_gpus = %s marks some", d.Count, opt.MPSGPUs)})
			continue
		}
		if old, dup := have[key]; dup {
			diffs = append(diffs, Difference{Line: d.Line, Msg: fmt.Sprintf("Name=mps %s is listed again (first on line %d)", key, old.Line)})
			continue
		}
		have[key] = d
	}
	for _, w := range want.MPS {
		h, ok := have[w.File]
		delete(have, w.File)
		switch {
		case !ok:
			diffs = append(diffs, Difference{Msg: fmt.Sprintf("GPU %d (%s, %s) has no Name=mps record: want Name=mps File=%s Count=%d ([gres] mps_gpus)", w.GPUIndex, w.BusID, w.File, w.File, w.Count)})
		case h.Count != w.Count:
			diffs = append(diffs, Difference{Line: h.Line, Msg: fmt.Sprintf("Name=mps File=%s Count=%d, but [gres] mps_count = %d", w.File, h.Count, w.Count)})
		}
	}
	var extra []gresconf.Device
	for _, h := range have {
		extra = append(extra, h)
	}
	slices.SortFunc(extra, func(a, b gresconf.Device) int { return a.Line - b.Line })
	for _, h := range extra {
		diffs = append(diffs, Difference{Line: h.Line, Msg: fmt.Sprintf("Name=mps File=%s: [gres] mps_gpus = %s does not mark this GPU", strings.Join(h.DeviceFiles(), ","), opt.MPSGPUs)})
	}
	return diffs
}
