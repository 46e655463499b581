package topo

import (
	"slices"
	"sort"

	"gpuprep/lib/cpuset"
)

// Kinds of CPU group that order cores, outermost first: the objects Slurm's
// hwloc tree keeps above cores (it filters L1 and L2 caches out).
const (
	levelPackage = iota
	levelDie
	levelNUMA
	levelL3
	levelCluster
	levelDistanceGroup
)

// level is one CPU group of the tree.
type level struct {
	cpus cpuset.Set
	kind int
}

// numberCores numbers cores the way Slurm does for gres.conf Cores= and
// its abstract CPU ids (xcpuinfo_hwloc_topo_get): in hwloc's logical order,
// which is a depth-first walk of the tree package > die > NUMA node > L3 >
// cluster > core, each object's children sorted by their first CPU, plus
// the groups hwloc makes of NUMA nodes by distance (distanceGroups). Where
// CPU numbering interleaves the NUMA nodes of a socket (Intel SNC with
// round-robin numbering) this differs from sorting cores by first CPU.
// numa are the NUMA nodes with their distances. Pure: no I/O.
func numberCores(s cpuSets, numa []NUMANode) ([]Core, []Socket) {
	cores := s.allCores()
	packages := s.allPackages()
	var levels []level
	for _, p := range packages {
		levels = append(levels, level{p.cpus, levelPackage})
	}
	for _, d := range s.dies {
		levels = append(levels, level{d.cpus, levelDie})
	}
	for _, n := range numa {
		levels = append(levels, level{n.CPUs.Intersection(s.online), levelNUMA})
	}
	for _, c := range s.l3 {
		levels = append(levels, level{c, levelL3})
	}
	// Clusters are mostly the cores themselves (x86: one L2 per core):
	// those add nothing to the tree and would cost cores x clusters set
	// comparisons on a large node.
	isCore := make(map[string]bool, len(cores))
	for _, c := range cores {
		isCore[c.String()] = true
	}
	for _, c := range s.clusters {
		if !isCore[c.String()] {
			levels = append(levels, level{c, levelCluster})
		}
	}
	nests := func(g cpuset.Set) bool {
		for _, l := range levels {
			if !g.IsSubsetOf(l.cpus) && !l.cpus.IsSubsetOf(g) && !g.Intersection(l.cpus).IsEmpty() {
				return false
			}
		}
		return true
	}
	for _, g := range distanceGroups(numa, nests) {
		levels = append(levels, level{g.Intersection(s.online), levelDistanceGroup})
	}
	keys := make([][]int, len(cores))
	for i, c := range cores {
		keys[i] = treeKey(c, levels)
	}
	order := make([]int, len(cores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices.Compare(keys[order[a]], keys[order[b]]) < 0 })

	out := make([]Core, len(cores))
	var sockets []Socket
	socketOf := map[int]int{} // package index -> sockets index
	for id, ci := range order {
		c := cores[ci]
		pi := slices.IndexFunc(packages, func(p idSet) bool { return p.cpus.Contains(c.Min()) })
		si, ok := socketOf[pi]
		if !ok {
			si = len(sockets)
			socketOf[pi] = si
			sockets = append(sockets, Socket{CPUs: cpuset.New()})
		}
		sockets[si].CPUs = sockets[si].CPUs.Union(c)
		sockets[si].Cores = append(sockets[si].Cores, id)
		out[id] = Core{ID: id, Socket: si, CPUs: c}
	}
	ids := socketIDs(packages, socketOf)
	for i := range sockets {
		sockets[i].ID = ids[i]
	}
	for i := range out {
		out[i].Socket = ids[out[i].Socket]
	}
	return out, sockets
}

// treeKey is a core's path in the tree: the first CPU of every group holding
// it, outermost (largest) first, then its own first CPU. Comparing keys
// compares the first CPUs of sibling subtrees, which is hwloc's order.
// Groups equal to a larger one or to the core are the same tree object.
func treeKey(core cpuset.Set, levels []level) []int {
	var chain []level
	for _, l := range levels {
		if !core.IsSubsetOf(l.cpus) || l.cpus.Equal(core) {
			continue
		}
		if slices.ContainsFunc(chain, func(o level) bool { return o.cpus.Equal(l.cpus) }) {
			continue
		}
		chain = append(chain, l)
	}
	sort.SliceStable(chain, func(a, b int) bool {
		sa, sb := chain[a].cpus.Size(), chain[b].cpus.Size()
		if sa != sb {
			return sa > sb
		}
		return chain[a].kind < chain[b].kind
	})
	key := make([]int, 0, len(chain)+1)
	for _, l := range chain {
		key = append(key, l.cpus.Min())
	}
	return append(key, core.Min())
}

// allCores is every online CPU in a core: the kernel's cores, and each CPU
// the kernel put in none as a core of its own.
func (s cpuSets) allCores() []cpuset.Set {
	out := slices.Clone(s.cores)
	in := cpuset.New()
	for _, c := range s.cores {
		in = in.Union(c)
	}
	for _, cpu := range s.online.Difference(in).List() {
		out = append(out, cpuset.New(cpu))
	}
	return out
}

// allPackages is the kernel's packages, plus one holding the CPUs in none
// (Slurm counts one socket where hwloc finds no package).
func (s cpuSets) allPackages() []idSet {
	out := slices.Clone(s.packages)
	in := cpuset.New()
	for _, p := range s.packages {
		in = in.Union(p.cpus)
	}
	if rest := s.online.Difference(in); !rest.IsEmpty() {
		out = append(out, idSet{id: -1, cpus: rest})
	}
	return out
}

// socketIDs names the sockets (in Slurm's order): physical_package_id when
// every package has a distinct one, else the socket's index.
func socketIDs(packages []idSet, socketOf map[int]int) []int {
	ids := make([]int, len(socketOf))
	seen := map[int]bool{}
	physical := true
	for pi, si := range socketOf {
		id := packages[pi].id
		if id < 0 || seen[id] {
			physical = false
		}
		seen[id] = true
		ids[si] = id
	}
	if !physical {
		for i := range ids {
			ids[i] = i
		}
	}
	return ids
}

// cpuList is the online CPUs with their socket, die and cores filled in from
// the numbered cores.
func (s cpuSets) cpuList(cores []Core) []CPU {
	ids := s.online.List()
	cpus := make([]CPU, len(ids))
	at := make(map[int]int, len(ids))
	for i, id := range ids {
		cpus[i] = CPU{ID: id, NUMANode: -1}
		at[id] = i
	}
	for _, c := range cores {
		for _, id := range c.CPUs.List() {
			cpu := &cpus[at[id]]
			cpu.Socket, cpu.CoreID, cpu.Core = c.Socket, c.CPUs.Min(), c.ID
		}
	}
	for _, d := range s.dies {
		for _, id := range d.cpus.List() {
			cpus[at[id]].Die = max(d.id, 0)
		}
	}
	return cpus
}
