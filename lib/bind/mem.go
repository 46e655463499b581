package bind

import (
	"fmt"
	"slices"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// planMemory sets a rank's memory policy nodes: the NUMA nodes of the
// CPUs it runs on (cpus), its GPU's node first; a CPU-less node holding
// GPU memory only with srunwrap.gpu_memory_nodes. Nodes spanning the
// whole node leave the policy as it is: binding to every node changes
// nothing but the syscall's cost.
func planMemory(in Input, r rank, cpus cpuset.Set, p *Plan) {
	n := in.Node
	if in.Config.Memory == srunconf.MemOff {
		p.MemFrom = "left as it is (srunwrap.memory = off)"
		return
	}
	if cpus.IsEmpty() {
		p.MemFrom = "left as it is (no CPUs to follow)"
		return
	}
	primary := -1
	if len(r.gpus) > 0 {
		primary = gpuTarget(n, r.gpus[0]).node
	}
	var nodes []int
	for _, nd := range n.NUMA {
		if !nd.CPUs.Intersection(cpus).IsEmpty() {
			nodes = append(nodes, nd.ID)
		}
	}
	if k := slices.Index(nodes, primary); k > 0 {
		nodes = append([]int{primary}, slices.Delete(nodes, k, k+1)...)
	}
	cpuNodes := nodes
	var gpuMem []int
	for _, g := range r.gpus {
		gpuMem = append(gpuMem, gpuMemoryNodes(n, g)...)
	}
	if in.Config.GPUMemoryNodes {
		for _, m := range gpuMem {
			if !slices.Contains(nodes, m) {
				nodes = append(nodes, m)
			}
		}
	}
	whole := len(nodes) == 0 || len(nodes) == len(n.NUMA)
	if !in.Brief {
		p.MemFrom = memFrom(cpuNodes, gpuMem, in.Config.GPUMemoryNodes, whole)
	}
	if !whole {
		p.MemNodes = nodes
	}
}

// memFrom says where a rank's memory nodes came from: the NUMA nodes of
// its CPUs, its GPU's CPU-less memory nodes gpuMem (added withGPUMem), or
// nothing when they are the whole node.
func memFrom(cpuNodes, gpuMem []int, withGPUMem, whole bool) string {
	s := "NUMA " + nodeWord(cpuNodes) + " of the CPUs"
	switch {
	case len(gpuMem) > 0 && withGPUMem:
		s += fmt.Sprintf(" and the GPU's memory %s (srunwrap.gpu_memory_nodes)", nodeWord(gpuMem))
	case len(gpuMem) > 0:
		s += fmt.Sprintf(", not the GPU's CPU-less memory %s (srunwrap.gpu_memory_nodes = false)", nodeWord(gpuMem))
	}
	if whole {
		return fmt.Sprintf("left as it is (%s: every NUMA node of this node)", s)
	}
	return s
}

// gpuMemoryNodes are the CPU-less NUMA nodes holding a GPU's memory: those
// of GPU.MemoryNUMANodes with memory (the driver reserves empty ones for
// MIG), or the first when none says; else the GPU's own node when it has
// no CPUs.
func gpuMemoryNodes(n *topo.Node, g *topo.GPU) []int {
	var out []int
	for _, id := range g.MemoryNUMANodes {
		if nd := numaByID(n, id); nd != nil && nd.CPUs.IsEmpty() && nd.MemoryMiB > 0 {
			out = append(out, id)
		}
	}
	if len(out) == 0 && len(g.MemoryNUMANodes) > 0 {
		out = g.MemoryNUMANodes[:1]
	}
	if nd := numaByID(n, g.NUMA); len(out) == 0 && nd != nil && nd.CPUs.IsEmpty() {
		out = []int{nd.ID}
	}
	return out
}

func nodeWord(nodes []int) string {
	if len(nodes) == 1 {
		return fmt.Sprintf("node %d", nodes[0])
	}
	return "nodes " + textfmt.JoinInts(nodes, ",")
}
