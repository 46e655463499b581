package bind

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

// target is the CPUs a GPU wants its rank on, before the pool.
type target struct {
	cpus cpuset.Set
	node int // the NUMA node they are, or -1 (a GPU's local_cpulist, every CPU)
	from string
}

// gpuTarget is a GPU's CPUs: its NUMA node's; for a GPU whose node has no
// CPUs (memory-only nodes on Grace Hopper), the nearest node with CPUs by
// NUMA distance; for a GPU without a NUMA node (VMs), its local_cpulist;
// when nothing is known, every CPU.
func gpuTarget(n *topo.Node, g *topo.GPU) target {
	from := g.NUMA
	if from < 0 && len(g.MemoryNUMANodes) > 0 {
		from = g.MemoryNUMANodes[0]
	}
	if nd := numaByID(n, from); nd != nil {
		if !nd.CPUs.IsEmpty() {
			return target{nd.CPUs, nd.ID, fmt.Sprintf("GPU %d's NUMA node %d", g.Index, nd.ID)}
		}
		if near := nearestNode(n, from, cpuset.Set{}); near != nil {
			return target{near.CPUs, near.ID, fmt.Sprintf("NUMA node %d, the nearest with CPUs to GPU %d's CPU-less node %d", near.ID, g.Index, from)}
		}
	}
	aff := g.CPUAffinity
	if aff.IsEmpty() {
		aff = g.Place.LocalCPUs
	}
	if !aff.IsEmpty() {
		return target{aff, -1, fmt.Sprintf("GPU %d's local CPUs (no NUMA node)", g.Index)}
	}
	return target{allCPUs(n), -1, fmt.Sprintf("every CPU (GPU %d's locality unknown)", g.Index)}
}

// nearestNode is the NUMA node with CPUs (within pool, unless empty)
// nearest to node from by SLIT distance, lowest id on ties; nil if none.
func nearestNode(n *topo.Node, from int, pool cpuset.Set) *topo.NUMANode {
	fi := slices.IndexFunc(n.NUMA, func(nd topo.NUMANode) bool { return nd.ID == from })
	var best *topo.NUMANode
	bestD := 0
	for i := range n.NUMA {
		nd := &n.NUMA[i]
		c := nd.CPUs
		if !pool.IsEmpty() {
			c = c.Intersection(pool)
		}
		if c.IsEmpty() {
			continue
		}
		d := 0
		if fi >= 0 && i < len(n.NUMA[fi].Distances) {
			d = n.NUMA[fi].Distances[i]
		}
		if best == nil || d < bestD {
			best, bestD = nd, d
		}
	}
	return best
}

// want is one rank's CPUs within the pool, to be split with the ranks
// sharing them.
type want struct {
	cpus  cpuset.Set
	from  string
	order int // GPU index, -1 without a GPU of its own
}

// cpuGroup is classes whose CPUs overlap, so that their ranks split them:
// contiguous runs of whole cores in core order, ranks ordered by GPU
// index, then local id.
type cpuGroup struct {
	classes []int        // by GPU index (want.order), then class
	all     cpuset.Set   // the CPUs they share
	cores   []cpuset.Set // all's CPUs by core, in core order
	ranks   int          // how many ranks share them
}

// groupCPUs works out each class's CPUs within the pool (the job's CPUs,
// else the task's allowed set) and groups the classes that overlap. With
// srunwrap.cpu_binding keep and a task already bound narrower than the
// job, the binding is kept instead.
func (l *layout) groupCPUs() {
	in, n := l.in, l.in.Node
	l.pool = in.pool()
	narrower := !in.JobCPUs.IsEmpty() && !in.Allowed.IsEmpty() && !in.JobCPUs.IsSubsetOf(in.Allowed)
	l.keep = in.Config.CPUBinding == srunconf.CPUKeep && narrower
	for c := range l.classes {
		cl := &l.classes[c]
		cl.cpuGroup = -1
		if l.keep {
			if t := rankTarget(n, cl.r); !t.cpus.IsEmpty() && t.cpus.Intersection(in.Allowed).IsEmpty() {
				cl.cpuWarn = &Warning{"placement", fmt.Sprintf("the task's CPU binding %s has no CPU in %s (%s): host memory and launches cross NUMA nodes; use --cpu-bind=none or srunwrap.cpu_binding = \"replace\"", srunconf.ShowN(in.Allowed.String(), pairMax), t.from, t.cpus)}
			}
			continue
		}
		cl.want, cl.cpuWarn = rankWant(n, cl.r, l.pool)
	}
	var sets []cpuset.Set
	var groups [][]int
	for c := range l.classes {
		w := l.classes[c].want
		if w == nil || w.cpus.IsEmpty() {
			continue
		}
		into := -1
		for g := 0; g < len(groups); g++ {
			if sets[g].Intersection(w.cpus).IsEmpty() {
				continue
			}
			if into < 0 {
				into = g
				groups[g] = append(groups[g], c)
				sets[g] = sets[g].Union(w.cpus)
				continue
			}
			// w joins two groups: merge g into the first.
			groups[into] = append(groups[into], groups[g]...)
			sets[into] = sets[into].Union(sets[g])
			groups = slices.Delete(groups, g, g+1)
			sets = slices.Delete(sets, g, g+1)
			g--
		}
		if into < 0 {
			groups = append(groups, []int{c})
			sets = append(sets, w.cpus)
		}
	}
	for gi, g := range groups {
		sort.SliceStable(g, func(a, b int) bool {
			oa, ob := l.classes[g[a]].want.order, l.classes[g[b]].want.order
			if oa != ob {
				return oa < ob
			}
			return g[a] < g[b]
		})
		grp := cpuGroup{classes: g, all: sets[gi], cores: coresOf(n, sets[gi])}
		for _, c := range g {
			grp.ranks += l.mult(c)
			l.classes[c].cpuGroup = gi
		}
		l.cpuGroups = append(l.cpuGroups, grp)
	}
}

// coresOf is all's CPUs by core, in core order; one CPU each for a node
// description without cores.
func coresOf(n *topo.Node, all cpuset.Set) []cpuset.Set {
	var cores []cpuset.Set
	for _, c := range n.Cores {
		if c.CPUs.Size() <= 2 && !all.Contains(c.CPUs.Min()) && !all.Contains(c.CPUs.Max()) {
			continue // cheap test first: most cores are outside
		}
		if x := c.CPUs.Intersection(all); !x.IsEmpty() {
			cores = append(cores, x)
		}
	}
	if len(cores) == 0 {
		for _, c := range all.List() {
			cores = append(cores, cpuset.New(c))
		}
	}
	return cores
}

// position is local rank i's place among the ranks of its CPU group g
// (it is of class c): the ranks of classes with a lower GPU index come
// first, then those with the same one by local id.
func (l *layout) position(g *cpuGroup, c, i int) int {
	order := l.classes[c].want.order
	j := 0
	for _, o := range g.classes {
		switch oo := l.classes[o].want.order; {
		case oo < order:
			j += l.mult(o)
		case oo == order:
			j += l.below(o, i)
		}
	}
	return j
}

// planCPUs sets local rank i's CPUs (it is of class c): its run of its
// group's cores, as even as possible (the first runs one core longer);
// with fewer cores than ranks, ranks share cores, with a warning. It
// returns the CPUs memory should follow: the plan's, the binding kept, or
// with srunwrap.cpu_binding off the CPUs the plan would have set.
func (l *layout) planCPUs(i, c int, p *Plan) cpuset.Set {
	in, cl := l.in, &l.classes[c]
	if cl.cpuWarn != nil {
		p.Warnings = append(p.Warnings, *cl.cpuWarn)
	}
	if l.keep {
		if !in.Brief {
			p.CPUsFrom = fmt.Sprintf("kept: the task is already bound to CPUs %s, narrower than the job's %s (srunwrap.cpu_binding = keep)", srunconf.ShowN(in.Allowed.String(), pairMax), srunconf.ShowN(in.JobCPUs.String(), pairMax))
		}
		return in.Allowed
	}
	if cl.want == nil {
		return cpuset.Set{}
	}
	if cl.cpuGroup >= 0 {
		g := &l.cpuGroups[cl.cpuGroup]
		j, k, m := l.position(g, c, i), g.ranks, len(g.cores)
		var run cpuset.Set
		if m >= k {
			size, start := m/k, j*(m/k)+min(j, m%k)
			if j < m%k {
				size++
			}
			for _, core := range g.cores[start : start+size] {
				run = run.Union(core)
			}
		} else {
			hi, lo := bits.Mul64(uint64(j), uint64(m))
			q, _ := bits.Div64(hi, lo, uint64(k)) // j*m/k without overflow: j < k
			run = g.cores[q]
		}
		p.CPUs = run
		if !in.Brief {
			p.CPUsFrom = cl.want.from
			if k > 1 {
				p.CPUsFrom += fmt.Sprintf(", run %d of %d (%s)", j+1, k, plural(k, "rank shares them", "ranks share them"))
			}
		}
		if m < k {
			p.Warnings = append(p.Warnings, Warning{"placement", fmt.Sprintf("%d ranks share %s (%s): ranks share cores", k, plural(m, "core", "cores"), g.all)})
		}
	}
	eff := p.CPUs
	if in.Config.CPUBinding == srunconf.CPUOff {
		if !in.Brief {
			p.CPUsFrom = fmt.Sprintf("left as it is (srunwrap.cpu_binding = off; the plan was %s)", p.CPUs)
		}
		p.CPUs = cpuset.Set{}
	}
	return eff
}

// rankTarget is the CPUs of a rank's GPU, or of all its GPUs.
func rankTarget(n *topo.Node, r rank) target {
	if len(r.gpus) == 1 {
		return gpuTarget(n, r.gpus[0])
	}
	t := target{node: -1}
	var froms []string
	for _, g := range r.gpus {
		gt := gpuTarget(n, g)
		t.cpus = t.cpus.Union(gt.cpus)
		if !slices.Contains(froms, gt.from) {
			froms = append(froms, gt.from)
		}
	}
	t.from = strings.Join(froms, ", ")
	if len(r.gpus) > 1 {
		t.from = "the visible GPUs' CPUs: " + t.from
	}
	return t
}

// rankWant intersects a rank's target with the pool; a pool without any
// of the target's CPUs gives the pool's CPUs nearest to it and a warning.
// Nil for a rank without GPUs.
func rankWant(n *topo.Node, r rank, pool cpuset.Set) (*want, *Warning) {
	w := &want{order: -1}
	if r.gpu != nil {
		w.order = r.gpu.Index
	}
	if len(r.gpus) == 0 {
		return nil, nil
	}
	t := rankTarget(n, r)
	w.cpus = t.cpus.Intersection(pool)
	w.from = t.from + " in the job's CPUs"
	if !w.cpus.IsEmpty() {
		return w, nil
	}
	if near := nearestNode(n, t.node, pool); t.node >= 0 && near != nil {
		w.cpus = near.CPUs.Intersection(pool)
		w.from = fmt.Sprintf("NUMA node %d's CPUs in the job's CPUs, the nearest to %s", near.ID, t.from)
	} else {
		w.cpus = pool
		w.from = "the job's CPUs (none near " + t.from + ")"
	}
	return w, &Warning{"placement", fmt.Sprintf("the job's CPUs on this node (%s) include none of %s (%s): using %s; ask Slurm for CPUs near the GPU (--gpus-per-task with --gpu-bind=closest, or fewer CPUs per task)", srunconf.ShowN(pool.String(), entryMax), t.from, t.cpus, srunconf.ShowN(w.cpus.String(), entryMax))}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func numaByID(n *topo.Node, id int) *topo.NUMANode {
	if id < 0 {
		return nil
	}
	for i := range n.NUMA {
		if n.NUMA[i].ID == id {
			return &n.NUMA[i]
		}
	}
	return nil
}

// allCPUs is every CPU of the node description.
// pool is the CPUs the ranks are placed in: the job's on this node, else
// the task's allowed CPUs, else every CPU of the node.
func (in Input) pool() cpuset.Set {
	switch {
	case !in.JobCPUs.IsEmpty():
		return in.JobCPUs
	case !in.Allowed.IsEmpty():
		return in.Allowed
	}
	return allCPUs(in.Node)
}

func allCPUs(n *topo.Node) cpuset.Set {
	s := cpuset.Set{}
	for _, c := range n.Cores {
		s = s.Union(c.CPUs)
	}
	for _, nd := range n.NUMA {
		s = s.Union(nd.CPUs)
	}
	return s
}
