package gresgen

import (
	"fmt"
	"strings"

	"gpuprep/lib/topo"
)

// nodeLine builds the slurm.conf node line: the counts slurmd will register
// (CPUs, ThreadsPerCore, RealMemory, and sockets as many as given, each of
// CoresPerSocket cores) and Gres= from the generated records: the GPU
// records by type, then mps:<total> for the Name=mps records.
func nodeLine(node *topo.Node, devs, mps []Device, opt Options, sockets int) NodeLine {
	nl := NodeLine{
		NodeName:       opt.NodeName,
		CPUs:           len(node.CPUs),
		Sockets:        sockets,
		ThreadsPerCore: node.ThreadsPerCore(),
		RealMemory:     node.MemoryMiB,
	}
	if nl.NodeName == "" {
		nl.NodeName = node.Hostname
	}
	if nl.Sockets > 0 {
		nl.CoresPerSocket = len(node.Cores) / nl.Sockets
	}
	counts := map[string]int{}
	var order []string
	for _, d := range devs {
		if counts[d.Type] == 0 {
			order = append(order, d.Type)
		}
		counts[d.Type]++
	}
	name := opt.Name
	if name == "" {
		name = "gpu"
	}
	for _, t := range order {
		nl.Gres = append(nl.Gres, GresCount{Name: name, Type: t, Count: counts[t]})
	}
	if total := mpsTotal(mps); total > 0 {
		nl.Gres = append(nl.Gres, GresCount{Name: mpsName, Count: int(total)})
	}
	return nl
}

// String formats the node line as slurm.conf wants it.
func (nl NodeLine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "NodeName=%s CPUs=%d Sockets=%d CoresPerSocket=%d ThreadsPerCore=%d RealMemory=%d",
		nl.NodeName, nl.CPUs, nl.Sockets, nl.CoresPerSocket, nl.ThreadsPerCore, nl.RealMemory)
	if len(nl.Gres) > 0 {
		parts := make([]string, len(nl.Gres))
		for i, g := range nl.Gres {
			parts[i] = fmt.Sprintf("%s:%s:%d", g.Name, g.Type, g.Count)
			if g.Type == "" {
				parts[i] = fmt.Sprintf("%s:%d", g.Name, g.Count)
			}
		}
		b.WriteString(" Gres=" + strings.Join(parts, ","))
	}
	if !nl.CpuSpecList.IsEmpty() {
		b.WriteString(" CpuSpecList=" + formatSpecList(nl.CpuSpecList))
	}
	return b.String()
}

// numaSmallerThanSockets says whether the node's CPU NUMA nodes split its
// sockets (AMD NPS2/NPS4, Intel SNC): more of them than sockets, each within
// one socket. Memory-only NUMA nodes (Grace Hopper's GPU memory) do not count.
func numaSmallerThanSockets(node *topo.Node) bool {
	numa := node.CPUNUMANodes()
	if len(numa) <= len(node.Sockets) {
		return false
	}
	for _, nd := range numa {
		within := false
		for _, s := range node.Sockets {
			if nd.CPUs.Intersection(s.CPUs).Equal(nd.CPUs) {
				within = true
				break
			}
		}
		if !within {
			return false
		}
	}
	return true
}
