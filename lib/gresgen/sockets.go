package gresgen

import (
	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

// SocketView is what slurmd counts as a socket, which slurm.conf's
// SlurmdParameters choose.
type SocketView string

// Socket views.
const (
	// SocketsReal counts CPU packages: slurmd without SlurmdParameters
	// for it, and `slurmd -C` always (it reads no slurm.conf).
	SocketsReal SocketView = "sockets"
	// SocketsNUMA is SlurmdParameters=numa_node_as_socket: slurmd counts
	// the objects of the kind hwloc attaches the first NUMA node to.
	SocketsNUMA SocketView = "numa_node_as_socket"
	// SocketsL3 is SlurmdParameters=l3cache_as_socket: slurmd counts the
	// L3 caches. Slurm prefers it when both parameters are set.
	SocketsL3 SocketView = "l3cache_as_socket"
)

// socketSets returns the OS CPUs of each socket slurmd counts under view,
// as xcpuinfo_hwloc_topo_get (src/slurmd/common/xcpuinfo.c) does with
// hwloc's tree, of which Node keeps the packages, NUMA nodes and L3 caches:
//   - SocketsReal: the packages.
//   - SocketsL3: the L3 caches holding CPUs; where the kernel lists none,
//     one socket of every CPU (slurmd turns a count of 0 into 1).
//   - SocketsNUMA: slurmd takes the kind of object the first NUMA node
//     (the one of core 0) hangs from in hwloc's tree: the package where
//     that node is one package (NUMA nodes as sockets, or several
//     packages per node being no more than one package each), the whole
//     machine where it spans every CPU (interleaved memory: one socket),
//     an L3 cache where it is exactly one (each L3 then counts), else a
//     group of its own CPUs (AMD NPS2/NPS4, Intel SNC: each CPU NUMA node
//     counts).
func socketSets(node *topo.Node, view SocketView) []cpuset.Set {
	all := cpuset.New()
	for _, c := range node.Cores {
		all = all.Union(c.CPUs)
	}
	packages := make([]cpuset.Set, len(node.Sockets))
	for i, s := range node.Sockets {
		packages[i] = s.CPUs
	}
	switch view {
	case SocketsL3:
		var out []cpuset.Set
		for _, l3 := range node.L3Caches {
			if in := l3.Intersection(all); !in.IsEmpty() {
				out = append(out, in)
			}
		}
		if len(out) == 0 {
			return []cpuset.Set{all}
		}
		return out
	case SocketsNUMA:
		first := firstNUMANode(node, all)
		switch {
		case first.Equal(all):
			// The package when there is one, the machine else: either
			// way one socket.
			return []cpuset.Set{all}
		case containsSet(packages, first):
			return packages
		case containsSet(node.L3Caches, first):
			return socketSets(node, SocketsL3)
		}
		var out []cpuset.Set
		for _, nd := range node.CPUNUMANodes() {
			if in := nd.CPUs.Intersection(all); !in.IsEmpty() {
				out = append(out, in)
			}
		}
		return out
	}
	return packages
}

// firstNUMANode is the CPUs of hwloc's first NUMA node: the one holding
// Slurm core 0 (hwloc numbers NUMA nodes in the order of its tree, as
// Slurm numbers cores). A node without NUMA information is one NUMA node
// of every CPU, as hwloc makes it.
func firstNUMANode(node *topo.Node, all cpuset.Set) cpuset.Set {
	if len(node.Cores) > 0 {
		for _, nd := range node.CPUNUMANodes() {
			if !nd.CPUs.Intersection(node.Cores[0].CPUs).IsEmpty() {
				return nd.CPUs.Intersection(all)
			}
		}
	}
	return all
}

func containsSet(sets []cpuset.Set, s cpuset.Set) bool {
	for _, x := range sets {
		if x.Equal(s) {
			return true
		}
	}
	return false
}

// socketCores turns socket CPU sets into Slurm core sets.
func socketCores(node *topo.Node, sets []cpuset.Set) []cpuset.Set {
	out := make([]cpuset.Set, len(sets))
	for i, s := range sets {
		out[i] = node.CoresOf(s)
	}
	return out
}

// viewName says what a socket view counts, for the output.
func viewName(v SocketView) string {
	switch v {
	case SocketsNUMA:
		return "NUMA nodes"
	case SocketsL3:
		return "L3 caches"
	}
	return "real sockets"
}
