package nodedesc

import (
	"encoding/json"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/topo"
)

// layout is how the file stores the node: what srunwrap's planner reads
// (lib/bind, lib/nccl) and nothing else, in few and small JSON types. A rank
// decodes it once in a fresh process, where encoding/json's first decode
// of a type costs more than its data: topo.Node's fifteen types took
// 1.4-1.7 ms to decode cold on the 2-core dev VM, against 0.3 ms warm.
type layout struct {
	Hostname string       `json:"hostname"`
	NUMA     []numaNode   `json:"numa"`
	Cores    []cpuset.Set `json:"cores"` // index: Slurm core id; value: its CPUs
	GPUs     []gpuPlace   `json:"gpus"`
	NICs     []nicPlace   `json:"nics"`
}

type numaNode struct {
	ID        int        `json:"id"`
	CPUs      cpuset.Set `json:"cpus"`
	Distances []int      `json:"distances"`
}

// gpuPlace is a GPU and where it sits (topo.GPU's fields srunwrap uses).
type gpuPlace struct {
	Index   int        `json:"index"`
	Minor   int        `json:"minor"`
	UUID    string     `json:"uuid"`
	NUMA    int        `json:"numa"`     // as topo resolves it
	CPUs    cpuset.Set `json:"cpus"`     // topo.GPU.CPUAffinity
	MemNUMA []int      `json:"mem_numa"` // CPU-less nodes with its memory
	// MIG devices as "GI CI UUID" (no UUID from a backend that has none).
	MIG []string `json:"mig,omitempty"`
	// Near are the nearest NICs as "name PATH" (topo.GPU.NearNICs).
	Near []string `json:"near,omitempty"`
	pciPlace
}

// pciPlace is topo.PCIPlace.
type pciPlace struct {
	BusID     string     `json:"bus_id"`
	SysPath   string     `json:"sys_path"`
	PCINUMA   int        `json:"pci_numa"`
	LocalCPUs cpuset.Set `json:"local_cpus"`
}

// nicPlace is an HCA or NIC; ports as "NUMBER STATE LINK_LAYER".
type nicPlace struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	NetDevs []string `json:"net_devs,omitempty"`
	Ports   []string `json:"ports,omitempty"`
	pciPlace
}

// MarshalJSON writes d with its node as a layout.
func (d Description) MarshalJSON() ([]byte, error) {
	type plain Description // its fields, not this method
	return json.Marshal(struct {
		plain
		Node layout `json:"node"` // hides plain.Node
	}{plain(d), toLayout(d.Node)})
}

// UnmarshalJSON reads d, its node from a layout.
func (d *Description) UnmarshalJSON(b []byte) error {
	type plain Description
	x := struct {
		*plain
		Node layout `json:"node"`
	}{plain: (*plain)(d)}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	d.Node = x.Node.node()
	return nil
}

func toLayout(n topo.Node) layout {
	l := layout{Hostname: n.Hostname}
	for _, nd := range n.NUMA {
		l.NUMA = append(l.NUMA, numaNode{ID: nd.ID, CPUs: nd.CPUs, Distances: nd.Distances})
	}
	l.Cores = make([]cpuset.Set, len(n.Cores))
	for _, c := range n.Cores {
		if c.ID >= 0 && c.ID < len(l.Cores) {
			l.Cores[c.ID] = c.CPUs
		}
	}
	for _, g := range n.GPUs {
		p := gpuPlace{Index: g.Index, Minor: g.Minor, UUID: g.UUID, NUMA: g.NUMA, CPUs: g.CPUAffinity,
			MemNUMA: g.MemoryNUMANodes, pciPlace: fromPCI(g.Place)}
		if p.BusID == "" {
			p.BusID = g.BusID
		}
		for _, m := range g.MIG.Devices {
			p.MIG = append(p.MIG, strings.TrimSpace(strconv.Itoa(m.GI)+" "+strconv.Itoa(m.CI)+" "+m.UUID))
		}
		for _, nn := range g.NearNICs {
			p.Near = append(p.Near, nn.Name+" "+string(nn.Path))
		}
		l.GPUs = append(l.GPUs, p)
	}
	for _, nic := range n.NICs {
		p := nicPlace{Name: nic.Name, Kind: nic.Kind, NetDevs: nic.NetDevs, pciPlace: fromPCI(nic.PCIPlace)}
		for _, pt := range nic.Ports {
			p.Ports = append(p.Ports, strings.Join([]string{strconv.Itoa(pt.Number), pt.State, pt.LinkLayer}, " "))
		}
		l.NICs = append(l.NICs, p)
	}
	return l
}

func (l layout) node() topo.Node {
	n := topo.Node{Hostname: l.Hostname}
	for _, nd := range l.NUMA {
		n.NUMA = append(n.NUMA, topo.NUMANode{ID: nd.ID, CPUs: nd.CPUs, Distances: nd.Distances})
	}
	for id, cpus := range l.Cores {
		n.Cores = append(n.Cores, topo.Core{ID: id, CPUs: cpus})
	}
	for _, p := range l.GPUs {
		g := topo.GPU{Device: gpu.Device{Index: p.Index, Minor: p.Minor, UUID: p.UUID, BusID: p.BusID},
			NUMA: p.NUMA, CPUAffinity: p.CPUs, MemoryNUMANodes: p.MemNUMA, Place: p.pciPlace.place()}
		for _, m := range p.MIG {
			f := strings.Fields(m)
			if len(f) < 2 {
				continue
			}
			d := gpu.MIGDevice{GI: atoi(f[0]), CI: atoi(f[1]), GICapMinor: -1, CICapMinor: -1}
			if len(f) > 2 {
				d.UUID = f[2]
			}
			g.MIG.Devices = append(g.MIG.Devices, d)
		}
		g.MIG.Current = len(g.MIG.Devices) > 0
		g.MIG.Capable, g.MIG.Pending = g.MIG.Current, g.MIG.Current
		for _, s := range p.Near {
			if name, path, ok := strings.Cut(s, " "); ok {
				g.NearNICs = append(g.NearNICs, topo.NearNIC{Name: name, Path: topo.PCIPath(path)})
			}
		}
		n.GPUs = append(n.GPUs, g)
	}
	for _, p := range l.NICs {
		nic := topo.NIC{Name: p.Name, Kind: p.Kind, NetDevs: p.NetDevs, PCIPlace: p.pciPlace.place()}
		for _, s := range p.Ports {
			f := strings.SplitN(s, " ", 3)
			if len(f) == 3 {
				nic.Ports = append(nic.Ports, topo.IBPort{Number: atoi(f[0]), State: f[1], LinkLayer: f[2]})
			}
		}
		n.NICs = append(n.NICs, nic)
	}
	return n
}

func fromPCI(p topo.PCIPlace) pciPlace {
	return pciPlace{BusID: p.BusID, SysPath: p.SysPath, PCINUMA: p.NUMANode, LocalCPUs: p.LocalCPUs}
}

func (p pciPlace) place() topo.PCIPlace {
	return topo.PCIPlace{BusID: p.BusID, SysPath: p.SysPath, NUMANode: p.PCINUMA, LocalCPUs: p.LocalCPUs}
}

// atoi is strconv.Atoi for numbers the prolog wrote; -1 for anything else.
func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return v
}
