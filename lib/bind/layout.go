package bind

import (
	"gpuprep/lib/cpuset"
	"gpuprep/lib/srunconf"
)

// layout is what the plans of a step's nr local ranks are made from,
// worked out once in time and memory of the visible GPUs, the node's cores
// and HCAs, never of nr: a task plans only its own rank, and a step of
// many ranks on a node costs each of them what a step of a few does.
//
// Ranks fall into classes: with a GPU each, the ranks of visible GPU c
// (local ids c, c+n, c+2n, ... of n visible GPUs); otherwise one class of
// every rank. Ranks of a class want the same CPUs and HCAs, so a rank's
// share of them is its position among the ranks of the classes it shares
// them with, counted (below, mult) rather than listed.
type layout struct {
	in      Input
	nr      int
	unbound *Warning // set: every rank runs unbound, with it
	vis     []visible
	// choose: rank i has GPU vis[i mod n] (class i mod n); else every rank
	// follows all visible GPUs (class 0) and has none of its own.
	choose bool
	spread *Warning // !choose: ranks that do not divide among the GPUs
	// keep: the task is bound narrower than the job and
	// srunwrap.cpu_binding is keep: CPUs are left as they are.
	keep      bool
	pool      cpuset.Set
	classes   []class
	cpuGroups []cpuGroup
	ports     []hcaPort
	hcaGroups []hcaGroup
}

// class is what the ranks of one class share.
type class struct {
	r       rank
	visible string   // Plan.Visible
	gpuWarn *Warning // CUDA may read the GPU's index as another GPU
	// want is the CPUs the class's ranks split with the rest of their
	// group; nil when srunwrap places no CPUs for them.
	want     *want
	cpuWarn  *Warning // CPUs kept away from the GPU, or none near it
	cpuGroup int      // index in cpuGroups; -1 for none
	near     near     // nearest HCA ports (with a GPU and ports)
	hcaGroup int      // index in hcaGroups; -1 for none
}

func newLayout(in Input, nr int) *layout {
	in.Config = settings(in.Config)
	l := &layout{in: in, nr: nr}
	if in.Node == nil {
		l.unbound = &Warning{CheckInput, "no node description"}
		return l
	}
	l.vis, l.unbound = visibleGPUs(in)
	if l.unbound != nil {
		return l
	}
	l.chooseGPUs()
	l.groupCPUs()
	l.groupHCAs()
	return l
}

// plan is local rank i's plan.
func (l *layout) plan(i int) Plan {
	p := Plan{LocalID: i, MemPolicy: l.in.Config.Memory}
	if w := l.unbound; w != nil {
		p.Warnings = []Warning{*w}
		p.CPUsFrom = "unbound: " + w.Msg
		p.MemFrom = "unbound"
		p.HCAFrom = "unbound"
		return p
	}
	c := l.classOf(i)
	l.planGPU(i, c, &p)
	eff := l.planCPUs(i, c, &p)
	planMemory(l.in, l.classes[c].r, eff, &p)
	l.planHCAs(i, c, &p)
	return p
}

// classOf is local rank i's class.
func (l *layout) classOf(i int) int {
	if l.choose {
		return i % len(l.classes)
	}
	return 0
}

// mult is the number of ranks in class c.
func (l *layout) mult(c int) int {
	if l.choose {
		return l.nr / len(l.classes)
	}
	return l.nr
}

// below is the number of ranks of class c with a local id below i.
func (l *layout) below(c, i int) int {
	if !l.choose {
		return min(i, l.nr)
	}
	if i <= c {
		return 0
	}
	n := len(l.classes)
	return min((i-c+n-1)/n, l.mult(c))
}

// settings are the config with its defaults filled in.
func settings(c srunconf.SrunwrapSection) srunconf.SrunwrapSection {
	if c.GPU == "" {
		c.GPU = srunconf.GPUNarrow
	}
	if c.CPUBinding == "" {
		c.CPUBinding = srunconf.CPUKeep
	}
	if c.Memory == "" {
		c.Memory = srunconf.MemBind
	}
	return c
}
