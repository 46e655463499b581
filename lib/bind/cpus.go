package bind

import (
	"fmt"
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

// planCPUs sets each rank's CPUs: its GPU's CPUs within the pool (the
// job's CPUs, else the task's allowed set), split into disjoint runs of
// whole cores among the ranks that share them. It returns the CPUs memory
// should follow: the plan's, the binding kept, or with srunwrap.cpu_binding
// off the CPUs the plan would have set.
func planCPUs(in Input, ranks []rank, plans []Plan) []cpuset.Set {
	n := in.Node
	pool := in.pool()
	narrower := !in.JobCPUs.IsEmpty() && !in.Allowed.IsEmpty() && !in.JobCPUs.IsSubsetOf(in.Allowed)
	wants := make([]*want, len(plans))
	eff := make([]cpuset.Set, len(plans))
	for i, r := range ranks {
		p := &plans[i]
		if in.Config.CPUBinding == srunconf.CPUKeep && narrower {
			if !in.Brief {
				p.CPUsFrom = fmt.Sprintf("kept: the task is already bound to CPUs %s, narrower than the job's %s (srunwrap.cpu_binding = keep)", in.Allowed, in.JobCPUs)
			}
			if t := rankTarget(n, r); !t.cpus.IsEmpty() && t.cpus.Intersection(in.Allowed).IsEmpty() {
				p.Warnings = append(p.Warnings, Warning{"placement", fmt.Sprintf("the task's CPU binding %s has no CPU in %s (%s): host memory and launches cross NUMA nodes; use --cpu-bind=none or srunwrap.cpu_binding = \"replace\"", in.Allowed, t.from, t.cpus)})
			}
			eff[i] = in.Allowed
			continue
		}
		wants[i] = rankWant(n, r, pool, p)
	}
	for _, g := range groupWants(wants) {
		splitGroup(n, g, wants, plans, in.Brief)
	}
	for i := range plans {
		if wants[i] != nil {
			eff[i] = plans[i].CPUs
		}
	}
	if in.Config.CPUBinding == srunconf.CPUOff {
		for i := range plans {
			if wants[i] != nil {
				if !in.Brief {
					plans[i].CPUsFrom = fmt.Sprintf("left as it is (srunwrap.cpu_binding = off; the plan was %s)", plans[i].CPUs)
				}
				plans[i].CPUs = cpuset.Set{}
			}
		}
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
func rankWant(n *topo.Node, r rank, pool cpuset.Set, p *Plan) *want {
	w := &want{order: -1}
	if r.gpu != nil {
		w.order = r.gpu.Index
	}
	if len(r.gpus) == 0 {
		return nil
	}
	t := rankTarget(n, r)
	w.cpus = t.cpus.Intersection(pool)
	w.from = t.from + " in the job's CPUs"
	if !w.cpus.IsEmpty() {
		return w
	}
	if near := nearestNode(n, t.node, pool); t.node >= 0 && near != nil {
		w.cpus = near.CPUs.Intersection(pool)
		w.from = fmt.Sprintf("NUMA node %d's CPUs in the job's CPUs, the nearest to %s", near.ID, t.from)
	} else {
		w.cpus = pool
		w.from = "the job's CPUs (none near " + t.from + ")"
	}
	p.Warnings = append(p.Warnings, Warning{"placement", fmt.Sprintf("the job's CPUs on this node (%s) include none of %s (%s): using %s; ask Slurm for CPUs near the GPU (--gpus-per-task with --gpu-bind=closest, or fewer CPUs per task)", pool, t.from, t.cpus, w.cpus)})
	return w
}

// groupWants groups ranks whose CPUs overlap, so that they split them.
// Each group lists its ranks ordered by GPU index, then local id.
func groupWants(wants []*want) [][]int {
	var groups [][]int
	var sets []cpuset.Set
	for i, w := range wants {
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
				groups[g] = append(groups[g], i)
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
			groups = append(groups, []int{i})
			sets = append(sets, w.cpus)
		}
	}
	for _, g := range groups {
		sort.SliceStable(g, func(a, b int) bool {
			wa, wb := wants[g[a]], wants[g[b]]
			if wa.order != wb.order {
				return wa.order < wb.order
			}
			return g[a] < g[b]
		})
	}
	return groups
}

// splitGroup shares the group's CPUs among its ranks: contiguous runs of
// whole cores in core order, as even as possible (the first runs one core
// longer). With fewer cores than ranks, ranks share cores, with a warning.
// brief leaves CPUsFrom unset (Input.Brief).
func splitGroup(n *topo.Node, group []int, wants []*want, plans []Plan, brief bool) {
	all := cpuset.Set{}
	for _, i := range group {
		all = all.Union(wants[i].cpus)
	}
	var cores []cpuset.Set
	for _, c := range n.Cores {
		if c.CPUs.Size() <= 2 && !all.Contains(c.CPUs.Min()) && !all.Contains(c.CPUs.Max()) {
			continue // cheap test first: most cores are outside
		}
		if x := c.CPUs.Intersection(all); !x.IsEmpty() {
			cores = append(cores, x)
		}
	}
	if len(cores) == 0 { // a node description without cores: one CPU each
		for _, c := range all.List() {
			cores = append(cores, cpuset.New(c))
		}
	}
	k, m := len(group), len(cores)
	start := 0
	for j, i := range group {
		var run cpuset.Set
		if m >= k {
			size := m / k
			if j < m%k {
				size++
			}
			for _, c := range cores[start : start+size] {
				run = run.Union(c)
			}
			start += size
		} else {
			run = cores[j*m/k]
		}
		p := &plans[i]
		p.CPUs = run
		if !brief {
			p.CPUsFrom = wants[i].from
			if k > 1 {
				p.CPUsFrom += fmt.Sprintf(", run %d of %d (%s)", j+1, k, plural(len(group), "rank shares them", "ranks share them"))
			}
		}
		if m < k {
			p.Warnings = append(p.Warnings, Warning{"placement", fmt.Sprintf("%d ranks share %s (%s): ranks share cores", k, plural(m, "core", "cores"), all)})
		}
	}
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
