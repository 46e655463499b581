package gresgen

import (
	"fmt"
	"sort"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/isolate"
	"gpuprep/lib/topo"
)

// Plan generates the gres.conf records, the node line and warnings for node.
// Records follow PCI bus order (NVML index), as Slurm's autodetection orders
// them; a GPU in MIG mode is replaced by its MIG devices.
func Plan(node *topo.Node, opt Options) (*Result, error) {
	if opt.Name == "" {
		opt.Name = "gpu"
	}
	res := &Result{nodeNameLines: opt.NodeNameLines}
	view := socketView(opt)
	sockets := socketSets(node, view)
	if opt.Slurmd != nil && opt.Slurmd.Problem != "" {
		res.Warnings = append(res.Warnings, Warning{
			Msg: "cannot tell what slurmd counts as sockets: " + opt.Slurmd.reason(),
			Fix: "fix slurm.conf, or give the file with --slurm-conf, or choose with --numa-as-socket[=false]",
		})
	}
	gpus := inBusOrder(node.GPUs)
	anyMIG := anyInMIG(gpus)
	linksKnown := !anyMIG && linksComplete(gpus)
	res.LinksUnknown = !anyMIG && !linksKnown && len(gpus) > 1
	for pos, g := range gpus {
		res.addGPU(g, gpus, pos, linksKnown, opt)
	}
	if anyMIG && len(gpus) > 1 {
		res.Warnings = append(res.Warnings, Warning{
			Msg: "Links= left out: MIG devices have no NVLinks and would shift Slurm's link positions",
		})
	}
	res.Warnings = append(res.Warnings, alignmentWarnings(node, gpus, view, sockets, opt)...)
	res.MPS, res.Warnings = planMPS(gpus, opt, res.Warnings)
	res.planNodeLines(node, view, sockets, opt)
	res.Warnings = append(res.Warnings, res.describeSockets(node, view, sockets, opt)...)
	res.addCPUSpec(node, opt)
	return res, nil
}

// socketView is what the node line counts as sockets: the flag or setting's
// choice, else what slurmd will count, else real sockets.
func socketView(opt Options) SocketView {
	view := opt.Sockets
	if view == "" && opt.Slurmd != nil {
		view = opt.Slurmd.Sockets
	}
	if view == "" {
		view = SocketsReal
	}
	return view
}

// inBusOrder returns a copy of gpus sorted by PCI bus id.
func inBusOrder(gpus []topo.GPU) []topo.GPU {
	out := append([]topo.GPU(nil), gpus...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].BusID < out[j].BusID })
	return out
}

// anyInMIG says whether any of gpus is in MIG mode.
func anyInMIG(gpus []topo.GPU) bool {
	for _, g := range gpus {
		if g.MIG.Current {
			return true
		}
	}
	return false
}

// linksComplete says whether every GPU has an NVLink count for each of gpus.
func linksComplete(gpus []topo.GPU) bool {
	for _, g := range gpus {
		if g.NVLinks == nil || len(g.NVLinks) != len(gpus) {
			return false
		}
	}
	return true
}

// addGPU appends the records of g, at position pos of gpus: one for the
// whole GPU (with Links= when linksKnown), or one per MIG device.
func (r *Result) addGPU(g topo.GPU, gpus []topo.GPU, pos int, linksKnown bool, opt Options) {
	file := fmt.Sprintf("/dev/nvidia%d", g.Minor)
	if !g.MIG.Current {
		d := Device{Name: opt.Name, Type: TypeFor(g.Name, opt.TypeNames), File: file, Cores: g.Cores, GPUIndex: g.Index, BusID: g.BusID}
		if linksKnown {
			d.Links = linksInFileOrder(g, gpus, pos)
		}
		r.Devices = append(r.Devices, d)
		return
	}
	r.addMIGDevices(g, file, opt)
}

// addMIGDevices appends a record per MIG device of g (file its device
// node), warning when it has none or a device's profile is unknown.
func (r *Result) addMIGDevices(g topo.GPU, file string, opt Options) {
	if len(g.MIG.Devices) == 0 {
		r.Warnings = append(r.Warnings, Warning{
			Msg: fmt.Sprintf("GPU %d (%s) is in MIG mode with no MIG devices: Slurm gets nothing from it", g.Index, g.BusID),
			Fix: "create the MIG instances (nvidia-smi mig -cgi ... -C) or disable MIG mode",
		})
	}
	for _, m := range g.MIG.Devices {
		profile := m.Profile
		if profile == "" {
			profile = "mig"
			r.Warnings = append(r.Warnings, Warning{
				Msg: fmt.Sprintf("GPU %d MIG device gi%d/ci%d: profile unknown without NVML", g.Index, m.GI, m.CI),
				Fix: "run with --gpu-backend nvml (or auto on a node with the driver)",
			})
		}
		r.Devices = append(r.Devices, Device{
			Name: opt.Name,
			Type: migType(g.Name, profile, opt.TypeNames),
			MultipleFiles: []string{file,
				fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", m.GICapMinor),
				fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", m.CICapMinor)},
			Cores:    g.Cores,
			GPUIndex: g.Index,
			BusID:    g.BusID,
			MIG:      fmt.Sprintf("gi%d/ci%d", m.GI, m.CI),
		})
	}
}

// planNodeLines sets the node line (sockets counted as view) and the line
// slurmd will register, which differs when slurmd counts sockets otherwise.
func (r *Result) planNodeLines(node *topo.Node, view SocketView, sockets []cpuset.Set, opt Options) {
	r.Node = nodeLine(node, r.Devices, r.MPS, opt, len(sockets))
	r.registered = r.Node
	if opt.Slurmd != nil && opt.Slurmd.Sockets != "" && opt.Slurmd.Sockets != view {
		r.registered = nodeLine(node, r.Devices, r.MPS, opt, len(socketSets(node, opt.Slurmd.Sockets)))
	}
}

// addCPUSpec sets the node line's CpuSpecList= from the housekeeping CPUs,
// or warns why it is left out.
func (r *Result) addCPUSpec(node *topo.Node, opt Options) {
	if opt.Housekeeping == "" {
		return
	}
	ids, err := cpuSpecList(node, isolate.Spec(opt.Housekeeping))
	if err != nil {
		r.Warnings = append(r.Warnings, Warning{
			Msg: fmt.Sprintf("CpuSpecList= left out: housekeeping_cpus %q: %v", opt.Housekeeping, err),
			Fix: "set housekeeping_cpus in the default profile to CPUs this node has",
		})
		return
	}
	r.Node.CpuSpecList, r.Node.HousekeepingCPUs = ids, osCPUsOfSpec(node, ids)
}

// migType names a MIG device: the short name configured for the full MIG
// type if any, else the parent's (short) type and the profile.
func migType(product, profile string, names map[string]string) string {
	full := MIGType(SlurmType(product), profile)
	if short, ok := lookupFold(names, full); ok {
		return short
	}
	return MIGType(TypeFor(product, names), profile)
}

// linksInFileOrder reorders g's NVLink counts (indexed by NVML index) into the
// order of the gres records, -1 for itself.
func linksInFileOrder(g topo.GPU, gpus []topo.GPU, self int) []int {
	out := make([]int, len(gpus))
	for j, peer := range gpus {
		if j == self {
			out[j] = -1
			continue
		}
		if peer.Index >= 0 && peer.Index < len(g.NVLinks) {
			out[j] = max(g.NVLinks[peer.Index], 0)
		}
	}
	return out
}

// alignmentWarnings flags GPUs whose local cores are not whole sockets (as
// the node line counts them, sockets their CPUs): Slurm binds GRES to
// sockets, so such Cores= cannot be honoured. Where NUMA nodes as sockets
// would fit, the fix says how to get them; where NUMA nodes split sockets
// but every GPU fits, the line still says why it counts real sockets.
func alignmentWarnings(node *topo.Node, gpus []topo.GPU, view SocketView, sockets []cpuset.Set, opt Options) []Warning {
	groups := socketCores(node, sockets)
	var bad []string
	for _, g := range gpus {
		if !isUnionOf(g.Cores, groups) {
			bad = append(bad, fmt.Sprintf("GPU %d (cores %s)", g.Index, g.Cores))
		}
	}
	split := view == SocketsReal && numaSmallerThanSockets(node)
	if len(bad) == 0 {
		if !split || opt.Sockets != "" {
			return nil
		}
		return []Warning{{
			Msg: fmt.Sprintf("the %d NUMA nodes split the %d sockets; %s", len(node.CPUNUMANodes()), len(node.Sockets), whyReal(opt)),
			Fix: numaFix(opt),
		}}
	}
	w := Warning{Msg: fmt.Sprintf("GPU affinity does not follow socket boundaries for %s", joinMax(bad, 3))}
	if view != SocketsNUMA && numaAligned(node, gpus) {
		if view == SocketsReal {
			w.Msg += "; " + whyReal(opt)
		}
		w.Fix = numaFix(opt)
	} else {
		w.Fix = "check the BIOS NUMA settings; Slurm will treat these GPUs as bound to whole sockets"
	}
	return []Warning{w}
}

// whyReal says why the node line counts real sockets: the flag or setting
// that asked for them, or the slurm.conf without numa_node_as_socket.
func whyReal(opt Options) string {
	if opt.Sockets != "" {
		return "the node line counts real sockets as " + opt.SocketsBy + " asks"
	}
	return "the node line counts real sockets, as slurmd will: " + opt.Slurmd.reason()
}

// numaFix says how to get NUMA nodes as sockets: slurmd must count them
// (SlurmdParameters in the slurm.conf read), then the default follows.
func numaFix(opt Options) string {
	fix := opt.Slurmd.howTo(SocketsNUMA) + ", restart slurmd and run gpuprep-gres again"
	if opt.Sockets != "" {
		fix += " without " + opt.SocketsBy
	}
	return fix
}

// describeSockets fills in what the node line counts as sockets and why,
// and what slurm.conf must say for slurmd to count the same; a line chosen
// by flag or setting that slurmd (per the slurm.conf read) will not count
// gets a warning.
func (r *Result) describeSockets(node *topo.Node, view SocketView, sockets []cpuset.Set, opt Options) []Warning {
	r.SocketsAs = view
	what := viewName(view)
	if opt.Sockets != "" {
		r.SocketsNote = fmt.Sprintf("Sockets=%d counts %s, as %s asks", len(sockets), what, opt.SocketsBy)
	} else {
		r.SocketsNote = fmt.Sprintf("Sockets=%d counts %s, as slurmd will: %s", len(sockets), what, opt.Slurmd.reason())
	}
	if view != SocketsReal && !sameSets(sockets, socketSets(node, SocketsReal)) {
		r.SlurmdParameter = string(view)
		r.NeedsNUMAAsSocket = view == SocketsNUMA
	}
	if !opt.Slurmd.found() {
		return nil
	}
	theirs := socketSets(node, opt.Slurmd.Sockets)
	r.SlurmConfAgrees = sameSets(sockets, theirs)
	if r.SlurmConfAgrees {
		return nil
	}
	return []Warning{{
		Msg: fmt.Sprintf("the node line counts %s (Sockets=%d) as %s asks, but slurmd will register Sockets=%d: %s",
			what, len(sockets), opt.SocketsBy, len(theirs), opt.Slurmd.reason()),
		Fix: fmt.Sprintf("%s and restart slurmd, or leave numa_as_socket at \"auto\" to follow slurm.conf", opt.Slurmd.howTo(view)),
	}}
}

// sameSets says whether a and b hold the same sets in the same order.
func sameSets(a, b []cpuset.Set) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func numaAligned(node *topo.Node, gpus []topo.GPU) bool {
	groups := socketCores(node, socketSets(node, SocketsNUMA))
	for _, g := range gpus {
		if !isUnionOf(g.Cores, groups) {
			return false
		}
	}
	return true
}

// isUnionOf says whether s is a union of whole groups.
func isUnionOf(s cpuset.Set, groups []cpuset.Set) bool {
	covered := cpuset.New()
	for _, g := range groups {
		in := g.Intersection(s)
		if in.IsEmpty() {
			continue
		}
		if !in.Equal(g) {
			return false
		}
		covered = covered.Union(g)
	}
	return covered.Equal(s)
}

func joinMax(items []string, n int) string {
	if len(items) <= n {
		return fmt.Sprint(join(items))
	}
	return fmt.Sprintf("%s and %d more", join(items[:n]), len(items)-n)
}

func join(items []string) string {
	s := ""
	for i, it := range items {
		if i > 0 {
			s += ", "
		}
		s += it
	}
	return s
}
