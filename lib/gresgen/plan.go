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
	if opt.NUMAAsSocketAuto && !opt.NUMAAsSocket && numaSmallerThanSockets(node) {
		opt.NUMAAsSocket = true
		res.Warnings = append(res.Warnings, Warning{
			Msg: fmt.Sprintf(`numa_as_socket = "auto": the node line counts the %d NUMA nodes as sockets, as they are smaller than the %d sockets`,
				len(node.CPUNUMANodes()), len(node.Sockets)),
			Fix: "set SlurmdParameters=numa_node_as_socket in slurm.conf (slurmd then counts the same), or numa_as_socket = false in [gres] for real sockets",
		})
	}
	gpus := append([]topo.GPU(nil), node.GPUs...)
	sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].BusID < gpus[j].BusID })

	anyMIG := false
	for _, g := range gpus {
		if g.MIG.Current {
			anyMIG = true
		}
	}
	linksKnown := !anyMIG
	for _, g := range gpus {
		if g.NVLinks == nil || len(g.NVLinks) != len(gpus) {
			linksKnown = false
		}
	}
	for pos, g := range gpus {
		gtype := TypeFor(g.Name, opt.TypeNames)
		file := fmt.Sprintf("/dev/nvidia%d", g.Minor)
		if !g.MIG.Current {
			d := Device{Name: opt.Name, Type: gtype, File: file, Cores: g.Cores, GPUIndex: g.Index, BusID: g.BusID}
			if linksKnown {
				d.Links = linksInFileOrder(g, gpus, pos)
			}
			res.Devices = append(res.Devices, d)
			continue
		}
		if len(g.MIG.Devices) == 0 {
			res.Warnings = append(res.Warnings, Warning{
				Msg: fmt.Sprintf("GPU %d (%s) is in MIG mode with no MIG devices: Slurm gets nothing from it", g.Index, g.BusID),
				Fix: "create the MIG instances (nvidia-smi mig -cgi ... -C) or disable MIG mode",
			})
		}
		for _, m := range g.MIG.Devices {
			profile := m.Profile
			if profile == "" {
				profile = "mig"
				res.Warnings = append(res.Warnings, Warning{
					Msg: fmt.Sprintf("GPU %d MIG device gi%d/ci%d: profile unknown without NVML", g.Index, m.GI, m.CI),
					Fix: "run with --gpu-backend nvml (or auto on a node with the driver)",
				})
			}
			res.Devices = append(res.Devices, Device{
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
	if anyMIG && len(gpus) > 1 {
		res.Warnings = append(res.Warnings, Warning{
			Msg: "Links= left out: MIG devices have no NVLinks and would shift Slurm's link positions",
		})
	}
	res.Warnings = append(res.Warnings, alignmentWarnings(node, gpus, opt)...)
	res.Node, res.NeedsNUMAAsSocket = nodeLine(node, res.Devices, opt)
	if opt.Housekeeping != "" {
		ids, err := cpuSpecList(node, isolate.Spec(opt.Housekeeping))
		if err != nil {
			res.Warnings = append(res.Warnings, Warning{
				Msg: fmt.Sprintf("CpuSpecList= left out: housekeeping_cpus %q: %v", opt.Housekeeping, err),
				Fix: "set housekeeping_cpus in the default profile to CPUs this node has",
			})
		} else {
			res.Node.CpuSpecList, res.Node.HousekeepingCPUs = ids, osCPUsOfSpec(node, ids)
		}
	}
	return res, nil
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

// alignmentWarnings flags GPUs whose local cores are not whole sockets: Slurm
// binds GRES to sockets, so such Cores= cannot be honoured unless NUMA nodes
// are counted as sockets.
func alignmentWarnings(node *topo.Node, gpus []topo.GPU, opt Options) []Warning {
	groups := socketGroups(node, opt.NUMAAsSocket)
	var bad []string
	for _, g := range gpus {
		if !isUnionOf(g.Cores, groups) {
			bad = append(bad, fmt.Sprintf("GPU %d (cores %s)", g.Index, g.Cores))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	w := Warning{Msg: fmt.Sprintf("GPU affinity does not follow socket boundaries for %s", joinMax(bad, 3))}
	if !opt.NUMAAsSocket && numaAligned(node, gpus) {
		w.Fix = "set SlurmdParameters=numa_node_as_socket in slurm.conf and generate the node line with --numa-as-socket"
	} else {
		w.Fix = "check the BIOS NUMA settings; Slurm will treat these GPUs as bound to whole sockets"
	}
	return []Warning{w}
}

// socketGroups returns the Slurm core sets Slurm treats as sockets.
func socketGroups(node *topo.Node, numaAsSocket bool) []cpuset.Set {
	var out []cpuset.Set
	if numaAsSocket {
		for _, nd := range node.CPUNUMANodes() {
			out = append(out, node.CoresOf(nd.CPUs))
		}
		return out
	}
	for _, s := range node.Sockets {
		out = append(out, cpuset.New(s.Cores...))
	}
	return out
}

func numaAligned(node *topo.Node, gpus []topo.GPU) bool {
	groups := socketGroups(node, true)
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
