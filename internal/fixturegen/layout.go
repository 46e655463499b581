package fixturegen

import (
	"fmt"

	"gpuprep/internal/nodeshape"
	"gpuprep/lib/cpuset"
)

// cpu is one logical CPU of a shape.
type cpu struct {
	ID     int
	Socket int
	Core   int // core index within its socket (sysfs core_id)
	Thread int // 0 or 1..ThreadsPerCore-1
	Node   int // NUMA node
}

// numaNode is one NUMA node of a shape.
type numaNode struct {
	ID     int
	CPUs   []int
	MemMiB int
	Socket int // the socket it belongs to (for CPU-less nodes: of its GPU)
	GPU    int // index of the GPU whose memory it holds, -1 if none
}

// layout is a shape's CPU and NUMA numbering, computed once.
type layout struct {
	s     nodeshape.Shape
	CPUs  []cpu // by id
	Nodes []numaNode
}

func (l *layout) nCPU() int { return len(l.CPUs) }

func (l *layout) numaPerSocket() int {
	if l.s.NUMAPerSocket <= 0 {
		return 1
	}
	return l.s.NUMAPerSocket
}

// newLayout numbers the CPUs the Linux/x86 way ("split"): id =
// thread*Sockets*CoresPerSocket + socket*CoresPerSocket + core.
func newLayout(s nodeshape.Shape) (*layout, error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	l := &layout{s: s}
	nps := l.numaPerSocket()
	perNode := s.CoresPerSocket / nps
	total := s.Sockets * s.CoresPerSocket
	l.CPUs = make([]cpu, total*s.ThreadsPerCore)
	for t := 0; t < s.ThreadsPerCore; t++ {
		for so := 0; so < s.Sockets; so++ {
			for c := 0; c < s.CoresPerSocket; c++ {
				id := t*total + so*s.CoresPerSocket + c
				l.CPUs[id] = cpu{ID: id, Socket: so, Core: c, Thread: t, Node: so*nps + c/perNode}
			}
		}
	}
	cpuNodes := s.Sockets * nps
	for n := 0; n < cpuNodes; n++ {
		l.Nodes = append(l.Nodes, numaNode{ID: n, MemMiB: s.MemoryMiBPerNode, Socket: n / nps, GPU: -1})
	}
	for _, c := range l.CPUs {
		l.Nodes[c.Node].CPUs = append(l.Nodes[c.Node].CPUs, c.ID)
	}
	for i := 0; i < s.CPULessNUMANodes; i++ {
		l.Nodes = append(l.Nodes, numaNode{ID: cpuNodes + i, MemMiB: s.CPULessMemoryMiB, GPU: -1})
	}
	for gi, g := range s.GPUs {
		for k, n := range g.MemoryNUMANodes {
			node := &l.Nodes[n]
			node.GPU = gi
			node.Socket = l.Nodes[g.NUMANode].Socket
			if k > 0 {
				node.MemMiB = 0 // MIG placeholder nodes are empty
			}
		}
	}
	return l, nil
}

// socketCPUs lists the CPUs of one socket.
func (l *layout) socketCPUs(so int) []int {
	var r []int
	for _, c := range l.CPUs {
		if c.Socket == so {
			r = append(r, c.ID)
		}
	}
	return r
}

// coreCPUs lists the threads of the core of cpu id.
func (l *layout) coreCPUs(id int) []int {
	c := l.CPUs[id]
	var r []int
	for _, o := range l.CPUs {
		if o.Socket == c.Socket && o.Core == c.Core {
			r = append(r, o.ID)
		}
	}
	return r
}

// coreGroupCPUs lists the CPUs of the group of n consecutive cores (within a
// socket) holding cpu id; n <= 0 means the whole socket.
func (l *layout) coreGroupCPUs(id, n int) []int {
	c := l.CPUs[id]
	if n <= 0 {
		return l.socketCPUs(c.Socket)
	}
	var r []int
	for _, o := range l.CPUs {
		if o.Socket == c.Socket && o.Core/n == c.Core/n {
			r = append(r, o.ID)
		}
	}
	return r
}

func (l *layout) allCPUs() []int {
	r := make([]int, l.nCPU())
	for i := range r {
		r[i] = i
	}
	return r
}

// nodeCPUs is the CPU list of NUMA node n (empty for CPU-less nodes).
func (l *layout) nodeCPUs(n int) []int { return l.Nodes[n].CPUs }

// localCPUs is what a PCI device on NUMA node n reports in local_cpus: the
// node's CPUs, or every CPU when the locality is unknown.
func (l *layout) localCPUs(n int) []int {
	if l.s.PCINUMAUnknown || n < 0 || n >= len(l.Nodes) || len(l.Nodes[n].CPUs) == 0 {
		return l.allCPUs()
	}
	return l.Nodes[n].CPUs
}

// pciNUMA is what a device on node n reports in numa_node.
func (l *layout) pciNUMA(n int) int {
	if l.s.PCINUMAUnknown {
		return -1
	}
	return n
}

// distance is the SLIT distance between two NUMA nodes.
func (l *layout) distance(a, b int) int {
	if a == b {
		return 10
	}
	na, nb := l.Nodes[a], l.Nodes[b]
	ca, cb := len(na.CPUs) > 0, len(nb.CPUs) > 0
	switch {
	case ca && cb:
		if na.Socket == nb.Socket {
			return 12
		}
		if l.s.CPUVendor == "AuthenticAMD" {
			return 32
		}
		if l.s.CPUVendor == "" { // Grace to Grace over NVLink-C2C
			return 40
		}
		return 21
	case ca != cb: // CPU node to GPU memory
		if na.Socket == nb.Socket {
			return 80
		}
		return 120
	default: // GPU memory to GPU memory
		if na.GPU == nb.GPU {
			return 80
		}
		return 120
	}
}

// cpuList prints CPU (or node) numbers the kernel's list way: "0-55,112-167".
func cpuList(ids []int) string { return cpuset.New(ids...).String() }

// cpuMask prints a set of nbits bits the kernel's mask way (cpumap files).
func cpuMask(ids []int, nbits int) string { return cpuset.New(ids...).Mask(nbits) }

// validate checks that a shape can be rendered consistently.
func validate(s nodeshape.Shape) error {
	if s.Name == "" {
		return fmt.Errorf("fixturegen: shape without a name")
	}
	if s.Sockets < 1 || s.CoresPerSocket < 1 || s.ThreadsPerCore < 1 {
		return fmt.Errorf("fixturegen: %s: sockets, cores and threads must be positive", s.Name)
	}
	nps := s.NUMAPerSocket
	if nps <= 0 {
		nps = 1
	}
	if s.CoresPerSocket%nps != 0 {
		return fmt.Errorf("fixturegen: %s: %d cores per socket do not split into %d NUMA nodes", s.Name, s.CoresPerSocket, nps)
	}
	cpuNodes := s.Sockets * nps
	nodes := cpuNodes + s.CPULessNUMANodes
	bus := map[string]string{}
	minors := map[int]bool{}
	memNode := map[int]bool{}
	for i, g := range s.GPUs {
		what := fmt.Sprintf("GPU %d", i)
		if _, err := parseBDF(g.BusID); err != nil {
			return fmt.Errorf("fixturegen: %s: %s: %v", s.Name, what, err)
		}
		if o, dup := bus[g.BusID]; dup {
			return fmt.Errorf("fixturegen: %s: %s and %s share bus id %s", s.Name, o, what, g.BusID)
		}
		bus[g.BusID] = what
		if minors[g.Minor] || g.Minor < 0 || g.Minor > 31 {
			return fmt.Errorf("fixturegen: %s: %s: minor %d duplicate or out of 0..31", s.Name, what, g.Minor)
		}
		minors[g.Minor] = true
		if g.NUMANode < 0 || g.NUMANode >= cpuNodes {
			return fmt.Errorf("fixturegen: %s: %s: NUMA node %d is not a CPU node", s.Name, what, g.NUMANode)
		}
		for _, n := range g.MemoryNUMANodes {
			if n < cpuNodes || n >= nodes || memNode[n] {
				return fmt.Errorf("fixturegen: %s: %s: memory NUMA node %d is not a free CPU-less node", s.Name, what, n)
			}
			memNode[n] = true
		}
		for _, m := range g.MIGDevices {
			if !g.MIG {
				return fmt.Errorf("fixturegen: %s: %s has MIG devices with MIG off", s.Name, what)
			}
			if m.GI < 0 || m.GI > 14 || m.CI < 0 || m.CI > 7 {
				return fmt.Errorf("fixturegen: %s: %s: MIG GI %d CI %d out of range", s.Name, what, m.GI, m.CI)
			}
			if m.GICapMinor != giCapMinor(g.Minor, m.GI) || m.CICapMinor != ciCapMinor(g.Minor, m.GI, m.CI) {
				return fmt.Errorf("fixturegen: %s: %s: MIG gi%d/ci%d cap minors %d/%d, mig-minors says %d/%d", s.Name, what,
					m.GI, m.CI, m.GICapMinor, m.CICapMinor, giCapMinor(g.Minor, m.GI), ciCapMinor(g.Minor, m.GI, m.CI))
			}
		}
	}
	for i, n := range s.NICs {
		what := fmt.Sprintf("NIC %d (%s)", i, n.NetName)
		if _, err := parseBDF(n.BusID); err != nil {
			return fmt.Errorf("fixturegen: %s: %s: %v", s.Name, what, err)
		}
		if o, dup := bus[n.BusID]; dup {
			return fmt.Errorf("fixturegen: %s: %s and %s share bus id %s", s.Name, o, what, n.BusID)
		}
		bus[n.BusID] = what
		if n.NUMANode < 0 || n.NUMANode >= cpuNodes {
			return fmt.Errorf("fixturegen: %s: %s: NUMA node %d is not a CPU node", s.Name, what, n.NUMANode)
		}
		if n.NetName == "" {
			return fmt.Errorf("fixturegen: %s: NIC %d has no net name", s.Name, i)
		}
	}
	return nil
}
