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
	Core   int // core index within its socket (caches and groups count these)
	CoreID int // sysfs core_id (Shape.CoreIDs[Core], or Core)
	Thread int // 0 or 1..ThreadsPerCore-1
	Node   int // NUMA node
	// Offline CPUs have no topology or cache and are in no online set.
	Offline bool
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

// cpuID is the logical id of thread t of core c of socket so under the
// shape's numbering (see nodeshape.Shape.Numbering).
func cpuID(s nodeshape.Shape, so, c, t int) int {
	S, C, T := s.Sockets, s.CoresPerSocket, s.ThreadsPerCore
	switch s.Numbering {
	case "socket-interleaved":
		return t*S*C + c*S + so
	case "compact":
		return so*C*T + c*T + t
	default: // split
		return t*S*C + so*C + c
	}
}

// newLayout numbers the CPUs (cpuID) and places cores in NUMA nodes.
func newLayout(s nodeshape.Shape) (*layout, error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	l := &layout{s: s}
	nps := l.numaPerSocket()
	perNode := s.CoresPerSocket / nps
	total := s.Sockets * s.CoresPerSocket
	offline := map[int]bool{}
	for _, id := range s.OfflineCPUs {
		offline[id] = true
	}
	l.CPUs = make([]cpu, total*s.ThreadsPerCore)
	for t := 0; t < s.ThreadsPerCore; t++ {
		for so := 0; so < s.Sockets; so++ {
			for c := 0; c < s.CoresPerSocket; c++ {
				id := cpuID(s, so, c, t)
				node := so*nps + c/perNode
				if s.NUMAInterleave {
					node = so*nps + c%nps
				}
				coreID := c
				if s.CoreIDs != nil {
					coreID = s.CoreIDs[c]
				}
				l.CPUs[id] = cpu{ID: id, Socket: so, Core: c, CoreID: coreID, Thread: t, Node: node,
					Offline: offline[id]}
			}
		}
	}
	cpuNodes := s.Sockets * nps
	for n := 0; n < cpuNodes; n++ {
		l.Nodes = append(l.Nodes, numaNode{ID: n, MemMiB: s.MemoryMiBPerNode, Socket: n / nps, GPU: -1})
	}
	for _, c := range l.CPUs {
		if !c.Offline {
			l.Nodes[c.Node].CPUs = append(l.Nodes[c.Node].CPUs, c.ID)
		}
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

// cpusWhere lists the online CPUs that keep says to keep, in id order.
func (l *layout) cpusWhere(keep func(o cpu) bool) []int {
	var r []int
	for _, o := range l.CPUs {
		if !o.Offline && keep(o) {
			r = append(r, o.ID)
		}
	}
	return r
}

// socketCPUs lists the online CPUs of one socket.
func (l *layout) socketCPUs(so int) []int {
	return l.cpusWhere(func(o cpu) bool { return o.Socket == so })
}

// computeUnit is the number of consecutive cores sharing thread_siblings.
func (l *layout) computeUnit() int {
	if l.s.ComputeUnitCores > 1 {
		return l.s.ComputeUnitCores
	}
	return 1
}

// coreCPUs lists the online thread siblings of cpu id: the threads of its
// core, or the cores of its compute unit.
func (l *layout) coreCPUs(id int) []int {
	c, cu := l.CPUs[id], l.computeUnit()
	return l.cpusWhere(func(o cpu) bool { return o.Socket == c.Socket && o.Core/cu == c.Core/cu })
}

// coreGroupCPUs lists the online CPUs of the group of n consecutive cores
// (by core index within a socket) holding cpu id; n <= 0 means the whole
// socket.
func (l *layout) coreGroupCPUs(id, n int) []int {
	c := l.CPUs[id]
	if n <= 0 {
		return l.socketCPUs(c.Socket)
	}
	return l.cpusWhere(func(o cpu) bool { return o.Socket == c.Socket && o.Core/n == c.Core/n })
}

// allCPUs lists every possible (and present) CPU.
func (l *layout) allCPUs() []int {
	r := make([]int, l.nCPU())
	for i := range r {
		r[i] = i
	}
	return r
}

// onlineCPUs lists the online CPUs.
func (l *layout) onlineCPUs() []int { return l.cpusWhere(func(cpu) bool { return true }) }

// offlineCPUs lists the offline CPUs.
func (l *layout) offlineCPUs() []int {
	var r []int
	for _, c := range l.CPUs {
		if c.Offline {
			r = append(r, c.ID)
		}
	}
	return r
}

// nodeCPUs is the CPU list of NUMA node n (empty for CPU-less nodes).
func (l *layout) nodeCPUs(n int) []int { return l.Nodes[n].CPUs }

// localCPUs is what a PCI device on NUMA node n reports in local_cpus: the
// node's CPUs, or every CPU when the locality is unknown.
func (l *layout) localCPUs(n int) []int {
	if l.s.PCINUMAUnknown || n < 0 || n >= len(l.Nodes) || len(l.Nodes[n].CPUs) == 0 {
		return l.onlineCPUs()
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

// list writes a CPU or node list file: the list and a newline, and a NUL
// after it for ListNUL shapes.
func (l *layout) list(t *tree, p string, ids []int) {
	s := cpuList(ids) + "\n"
	if l.s.ListNUL {
		s += "\x00"
	}
	t.file(p, s)
}

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
	if err := validateCPUs(s); err != nil {
		return err
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

// validateCPUs checks the CPU numbering and topology fields of a shape.
func validateCPUs(s nodeshape.Shape) error {
	switch s.Numbering {
	case "", "split", "socket-interleaved", "compact":
	default:
		return fmt.Errorf("fixturegen: %s: unknown CPU numbering %q (want \"\", \"socket-interleaved\" or \"compact\")", s.Name, s.Numbering)
	}
	if s.CoreIDs != nil {
		if len(s.CoreIDs) != s.CoresPerSocket {
			return fmt.Errorf("fixturegen: %s: %d CoreIDs for %d cores per socket", s.Name, len(s.CoreIDs), s.CoresPerSocket)
		}
		seen := map[int]bool{}
		for c, id := range s.CoreIDs {
			if id < 0 || seen[id] {
				return fmt.Errorf("fixturegen: %s: core %d: core_id %d negative or duplicate", s.Name, c, id)
			}
			seen[id] = true
		}
	}
	if cu := s.ComputeUnitCores; cu < 0 || cu > 1 && (s.ThreadsPerCore != 1 || s.CoresPerSocket%cu != 0) {
		return fmt.Errorf("fixturegen: %s: compute units of %d cores need ThreadsPerCore 1 (have %d) and must divide %d cores per socket",
			s.Name, cu, s.ThreadsPerCore, s.CoresPerSocket)
	}
	if cl := s.ClusterCores; cl < 0 || cl > 1 && s.CoresPerSocket%cl != 0 {
		return fmt.Errorf("fixturegen: %s: clusters of %d cores do not divide %d cores per socket", s.Name, cl, s.CoresPerSocket)
	}
	n := s.Sockets * s.CoresPerSocket * s.ThreadsPerCore
	off := map[int]bool{}
	for _, id := range s.OfflineCPUs {
		if id < 0 || id >= n {
			return fmt.Errorf("fixturegen: %s: offline CPU %d out of range 0..%d", s.Name, id, n-1)
		}
		if off[id] {
			return fmt.Errorf("fixturegen: %s: offline CPU %d listed twice", s.Name, id)
		}
		off[id] = true
	}
	if len(off) == n {
		return fmt.Errorf("fixturegen: %s: every CPU is offline", s.Name)
	}
	return nil
}
