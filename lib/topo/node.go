// Package topo is the node model: CPUs (cores, sockets, SMT), NUMA nodes, PCI
// places, NICs and GPUs, and the mapping from OS CPU ids to Slurm's abstract
// core ids that gres.conf Cores= uses. Readers go through a host.Root; the
// model itself is plain data.
package topo

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Node is everything gpuprep knows of a node's layout.
type Node struct {
	Hostname  string     `json:"hostname"`
	CPUs      []CPU      `json:"cpus"`
	Cores     []Core     `json:"cores"`
	Sockets   []Socket   `json:"sockets"`
	NUMA      []NUMANode `json:"numa"`
	MemoryMiB uint64     `json:"memory_mib"` // /proc/meminfo MemTotal, as slurmd -C reports RealMemory
	GPUs      []GPU      `json:"gpus"`
	NICs      []NIC      `json:"nics"`
	// GPUBackend names the backend the GPUs came from.
	GPUBackend string `json:"gpu_backend"`
	// L3Caches are the CPUs sharing each level-3 cache (cache/index<K>
	// of level 3), in the order of their first CPU: what slurmd counts as
	// sockets under SlurmdParameters=l3cache_as_socket. Empty where the
	// kernel lists no L3.
	L3Caches []cpuset.Set `json:"l3_caches,omitempty"`
}

// GPU is a GPU placed on the node: the backend's facts plus where it sits.
type GPU struct {
	gpu.Device
	// NUMA is the GPU's NUMA node as gpuprep resolves it: the PCI
	// numa_node, else the one node whose CPUs equal its affinity, else -1.
	NUMA int `json:"numa"`
	// CPUAffinity is the set of CPUs local to the GPU: the PCI device's
	// local_cpulist (what NVML's CPU affinity is made of). Empty when
	// unknown.
	CPUAffinity cpuset.Set `json:"cpu_affinity"`
	// MemoryNUMANodes lists CPU-less NUMA nodes holding this GPU's memory
	// (Grace Hopper): the node of the driver's
	// /proc/driver/nvidia/gpus/<bus>/numa_status. Empty elsewhere.
	MemoryNUMANodes []int `json:"memory_numa_nodes,omitempty"`
	// Cores are the Slurm core ids with a CPU in the GPU's affinity (all
	// cores when the affinity is unknown).
	Cores cpuset.Set `json:"cores"`
	// NearNICs are the NICs closest to the GPU on PCI, best first.
	NearNICs []NearNIC `json:"near_nics"`
	Place    PCIPlace  `json:"place"`
}

// NearNIC is a NIC and its PCI path to a GPU.
type NearNIC struct {
	Name string  `json:"name"`
	Path PCIPath `json:"path"`
}

// Options select what Discover reads: only what the caller needs.
type Options struct {
	// NICs reads the node's NICs (/sys/class/net, /sys/class/infiniband)
	// and each GPU's nearest ones: srunwrap wants the HCA nearest its GPU,
	// the gres table shows them, gres.conf needs none.
	NICs bool
	// GPUs, when not nil, places only the GPUs with these indexes (a
	// rank's own GPU, a job's GPUs); nil places every GPU.
	GPUs []int
}

// Discover reads the node under r and places the GPUs that b reports.
func Discover(r host.Root, b gpu.Backend, opt Options) (*Node, error) {
	n := &Node{}
	sets, err := readCPUSets(r)
	if err != nil {
		return nil, err
	}
	if n.NUMA, err = readNUMA(r, sets.online); err != nil {
		return nil, err
	}
	n.Cores, n.Sockets = numberCores(sets, n.NUMA)
	n.L3Caches = sets.l3
	n.CPUs = sets.cpuList(n.Cores)
	for i := range n.CPUs {
		for _, nd := range n.NUMA {
			if nd.CPUs.Contains(n.CPUs[i].ID) {
				n.CPUs[i].NUMANode = nd.ID
			}
		}
	}
	if b, err := r.ReadFile("/proc/meminfo"); err == nil {
		kib, ok := parseMemTotal(b)
		if !ok {
			return nil, fmt.Errorf("/proc/meminfo: no MemTotal line")
		}
		n.MemoryMiB = kib / 1024
	} else if !isNotExist(err) {
		return nil, err
	}
	n.Hostname = readHostname(r)
	if opt.NICs {
		if n.NICs, err = readNICs(r); err != nil {
			return nil, err
		}
	}
	if b != nil {
		n.GPUBackend = b.Name()
		devs, err := b.Devices()
		if err != nil {
			return nil, fmt.Errorf("gpu backend %s: %w", b.Name(), err)
		}
		for _, d := range devs {
			if opt.GPUs != nil && !slices.Contains(opt.GPUs, d.Index) {
				continue
			}
			g, err := n.placeGPU(r, d)
			if err != nil {
				return nil, err
			}
			n.GPUs = append(n.GPUs, g)
		}
	}
	return n, nil
}

// placeGPU adds where a GPU sits: its PCI place, NUMA node, local CPUs and
// Slurm cores, memory NUMA nodes and nearest NICs. topo is the one reader
// of these facts; GPU backends only say which GPUs exist.
func (n *Node) placeGPU(r host.Root, d gpu.Device) (GPU, error) {
	g := GPU{Device: d, NUMA: -1}
	place, err := readPCIPlace(r, d.BusID)
	if err != nil && !isNotExist(err) {
		return g, err
	}
	if err == nil {
		g.Place = place
	} else {
		g.Place = PCIPlace{BusID: d.BusID, NUMANode: -1}
	}
	g.CPUAffinity = g.Place.LocalCPUs
	g.NUMA = g.Place.NUMANode
	if g.MemoryNUMANodes, err = readGPUMemoryNUMA(r, d.BusID); err != nil {
		return g, err
	}
	if g.NUMA < 0 {
		g.NUMA = n.numaOfCPUs(g.CPUAffinity)
	}
	g.Cores = n.CoresOf(g.CPUAffinity)
	if g.CPUAffinity.IsEmpty() {
		g.Cores = cpuset.Range(0, len(n.Cores)-1)
	}
	g.NearNICs = n.nearNICs(g.Place)
	return g, nil
}

// numaOfCPUs returns the NUMA node whose CPUs are exactly cpus, or -1.
func (n *Node) numaOfCPUs(cpus cpuset.Set) int {
	if cpus.IsEmpty() {
		return -1
	}
	for _, nd := range n.NUMA {
		if nd.CPUs.Equal(cpus) {
			return nd.ID
		}
	}
	if len(n.NUMA) == 1 && cpus.IsSubsetOf(n.NUMA[0].CPUs) {
		return n.NUMA[0].ID
	}
	return -1
}

// CoresOf returns the Slurm core ids having at least one CPU in cpus.
func (n *Node) CoresOf(cpus cpuset.Set) cpuset.Set {
	var ids []int
	for _, c := range n.Cores {
		if !c.CPUs.Intersection(cpus).IsEmpty() {
			ids = append(ids, c.ID)
		}
	}
	return cpuset.New(ids...)
}

// CPUsOfCores returns the OS CPUs of the given Slurm core ids.
func (n *Node) CPUsOfCores(cores cpuset.Set) cpuset.Set {
	out := cpuset.New()
	for _, c := range n.Cores {
		if cores.Contains(c.ID) {
			out = out.Union(c.CPUs)
		}
	}
	return out
}

// ThreadsPerCore is the threads per core as slurmd -C counts them: online
// CPUs divided by cores, rounded down (1 on a hybrid CPU whose E-cores have
// one thread each; Slurm then logs that the counts do not divide).
func (n *Node) ThreadsPerCore() int {
	if len(n.Cores) == 0 {
		return 1
	}
	return max(len(n.CPUs)/len(n.Cores), 1)
}

// CPUNUMANodes returns the NUMA nodes that have CPUs.
func (n *Node) CPUNUMANodes() []NUMANode {
	var out []NUMANode
	for _, nd := range n.NUMA {
		if !nd.CPUs.IsEmpty() {
			out = append(out, nd)
		}
	}
	return out
}

func (n *Node) nearNICs(p PCIPlace) []NearNIC {
	sys := PathRank(PathSystem)
	best := sys
	var out []NearNIC
	for _, nic := range n.NICs {
		if nic.Kind == "ethernet" && len(n.NICs) > 1 {
			// Plain Ethernet NICs are management networks; list them
			// only when nothing else exists.
			continue
		}
		path := pciPath(p, nic.PCIPlace)
		if r := PathRank(path); r < best {
			best, out = r, nil
		}
		if PathRank(path) == best {
			out = append(out, NearNIC{Name: nic.Name, Path: path})
		}
	}
	if best == sys {
		return nil
	}
	return out
}

// readHostname reads /proc/sys/kernel/hostname under the root (short name, as
// Slurm's NodeName), falling back to os.Hostname on the real root.
func readHostname(r host.Root) string {
	h, err := r.ReadString("/proc/sys/kernel/hostname")
	if err != nil || h == "" {
		if !r.IsHost() {
			return "node"
		}
		if h, err = os.Hostname(); err != nil {
			return "node"
		}
	}
	short, _, _ := strings.Cut(h, ".")
	return short
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }
