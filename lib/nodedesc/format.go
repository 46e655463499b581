package nodedesc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// The file is text, one fact per line, "key field field ...", each field a
// bare word or a Go-quoted string, in the way /proc files are: a rank
// parses it in about 0.1 ms, where encoding/json took 1.3-1.5 ms in a fresh
// process (its first decode of each type is the cost), most of what
// srunwrap may add to a task's start. The first line names the format and
// its version:
//
//	gpuprep-node-description 2
//	boot_id 5fdd1806-8066-410a-86c1-b9489a13f7e2
//	gpuprep v1.4.0
//	written 2026-12-01T13:52:00Z
//	config_file /etc/gpuprep/gpuprep.toml
//	hostname dgxh100-01
//	numa 0 0-55,112-167 10,21                      id, CPUs, distances
//	core 0,112                                     Slurm core 0, 1, ... in order
//	gpu 0 2 GPU-1e0d... 0 0-55,112-167 -           index, minor, UUID, NUMA, CPUs, memory nodes
//	gpu_pci 0 0000:18:00.0 0 0-55,112-167 /sys/devices/pci0000:15/...
//	gpu_mig 0 1 0 MIG-3b3f...                      GPU index, GI, CI, UUID
//	gpu_near 0 mlx5_0 PIX                          nearest NICs
//	nic mlx5_0 infiniband ibp25s0                  name, kind, net devices
//	nic_pci mlx5_0 0000:19:00.0 0 0-55,112-167 /sys/devices/...
//	nic_port mlx5_0 1 ACTIVE InfiniBand
//	slurm_gpu 2                                    Slurm's GPU 0, 1, ...: its /dev/nvidia minor
//	srunwrap gpu narrow                            [srunwrap] keys
//	srunwrap_check memlock warn
//	fabric 0 name ib-ndr                           [[nccl.fabric]] number 0
//	fabric 0 env NCCL_IB_QPS_PER_CONNECTION 4
//
// "-" is an empty set or list.
const formatName = "gpuprep-node-description"

// encode writes d in the file's format.
func encode(d *Description) []byte {
	var w lineWriter
	w.line(formatName, strconv.Itoa(d.Version))
	w.line("boot_id", d.BootID)
	w.line("gpuprep", d.Gpuprep)
	w.line("written", d.Written.UTC().Format(time.RFC3339))
	w.line("config_file", d.ConfigFile)
	n := d.Node
	w.line("hostname", n.Hostname)
	for _, nd := range n.NUMA {
		w.line("numa", strconv.Itoa(nd.ID), set(nd.CPUs), ints(nd.Distances))
	}
	cores := make([]cpuset.Set, len(n.Cores))
	for _, c := range n.Cores {
		if c.ID >= 0 && c.ID < len(cores) {
			cores[c.ID] = c.CPUs
		}
	}
	for _, c := range cores {
		w.line("core", set(c))
	}
	for _, g := range n.GPUs {
		i := strconv.Itoa(g.Index)
		w.line("gpu", i, strconv.Itoa(g.Minor), g.UUID, strconv.Itoa(g.NUMA), set(g.CPUAffinity), ints(g.MemoryNUMANodes))
		bus := g.Place.BusID
		if bus == "" {
			bus = g.BusID
		}
		w.line("gpu_pci", i, bus, strconv.Itoa(g.Place.NUMANode), set(g.Place.LocalCPUs), g.Place.SysPath)
		for _, m := range g.MIG.Devices {
			w.line("gpu_mig", i, strconv.Itoa(m.GI), strconv.Itoa(m.CI), m.UUID)
		}
		for _, nn := range g.NearNICs {
			w.line("gpu_near", i, nn.Name, string(nn.Path))
		}
	}
	for _, nic := range n.NICs {
		w.line("nic", nic.Name, nic.Kind, list(nic.NetDevs))
		w.line("nic_pci", nic.Name, nic.BusID, strconv.Itoa(nic.NUMANode), set(nic.LocalCPUs), nic.SysPath)
		for _, p := range nic.Ports {
			w.line("nic_port", nic.Name, strconv.Itoa(p.Number), p.State, p.LinkLayer)
		}
	}
	for _, m := range d.SlurmGPUs {
		w.line("slurm_gpu", strconv.Itoa(m))
	}
	encodeSettings(&w, d)
	return w.b.Bytes()
}

// decode parses a file named name (for errors) in the file's format.
func decode(name string, b []byte) (*Description, error) {
	d := &Description{}
	p := parser{name: name}
	gpus := map[int]int{}    // GPU index -> position in Node.GPUs
	nics := map[string]int{} // NIC name -> position in Node.NICs
	rest := string(b)
	// One slice of the right size for the core lines (a hundred and more
	// on a big node) rather than growing it line by line.
	if k := strings.Count(rest, "\ncore "); k > 0 {
		d.Node.Cores = make([]topo.Core, 0, k)
	}
	var f []string // the fields of the current line
	for ln := 0; rest != ""; ln++ {
		var raw string
		raw, rest, _ = strings.Cut(rest, "\n")
		p.ln = ln + 1
		if len(raw) == 0 {
			continue
		}
		var err error
		if f, err = fields(f, raw); err != nil {
			return nil, p.errorf("%v", err)
		}
		if ln == 0 {
			if len(f) != 2 || f[0] != formatName {
				return nil, p.errorf("not a node description (first line %q)", textfmt.Clip(raw, 60))
			}
			d.Version = p.int(f[1])
			if d.Version != Version {
				return d, nil // Load says it is stale
			}
			continue
		}
		if err := p.fact(d, f, gpus, nics); err != nil {
			return nil, err
		}
		if p.err != nil {
			return nil, p.err
		}
	}
	if d.Version == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	return d, nil
}

// lineFields is the number of fields of each kind of line, its key
// included.
var lineFields = map[string]int{"boot_id": 2, "gpuprep": 2, "written": 2, "config_file": 2, "hostname": 2, "numa": 4, "core": 2,
	"gpu": 7, "gpu_pci": 6, "gpu_mig": 5, "gpu_near": 4, "nic": 4, "nic_pci": 6, "nic_port": 5,
	"srunwrap": 3, "srunwrap_check": 3, "fabric": 4, "fabric_env": 4, "slurm_gpu": 2}

// fact adds one line's fact to d.
func (p *parser) fact(d *Description, f []string, gpus map[int]int, nics map[string]int) error {
	n := &d.Node
	if k, ok := lineFields[f[0]]; !ok {
		return nil // a key from a newer gpuprep of the same version: ignore it
	} else if len(f) != k {
		return p.errorf("%s: %d fields, want %d", f[0], len(f)-1, k-1)
	}
	switch f[0] {
	case "boot_id":
		d.BootID = f[1]
	case "gpuprep":
		d.Gpuprep = f[1]
	case "written":
		t, err := time.Parse(time.RFC3339, f[1])
		if err != nil {
			return p.errorf("written: %v", err)
		}
		d.Written = t
	case "config_file":
		d.ConfigFile = f[1]
	case "hostname":
		n.Hostname = f[1]
	case "numa":
		n.NUMA = append(n.NUMA, topo.NUMANode{ID: p.int(f[1]), CPUs: p.set(f[2]), Distances: p.ints(f[3])})
	case "core":
		n.Cores = append(n.Cores, topo.Core{ID: len(n.Cores), CPUs: p.set(f[1])})
	case "slurm_gpu":
		d.SlurmGPUs = append(d.SlurmGPUs, p.int(f[1]))
	case "gpu":
		g := topo.GPU{NUMA: p.int(f[4]), CPUAffinity: p.set(f[5]), MemoryNUMANodes: p.ints(f[6])}
		g.Index, g.Minor, g.UUID = p.int(f[1]), p.int(f[2]), f[3]
		n.GPUs = append(n.GPUs, g)
		gpus[g.Index] = len(n.GPUs) - 1
	case "gpu_pci", "gpu_mig", "gpu_near":
		i, ok := gpus[p.int(f[1])]
		if !ok {
			return p.errorf("%s: no gpu %s line before it", f[0], f[1])
		}
		p.gpuFact(&n.GPUs[i], f)
	case "nic":
		n.NICs = append(n.NICs, topo.NIC{Name: f[1], Kind: f[2], NetDevs: p.list(f[3])})
		nics[f[1]] = len(n.NICs) - 1
	case "nic_pci", "nic_port":
		i, ok := nics[f[1]]
		if !ok {
			return p.errorf("%s: no nic %s line before it", f[0], f[1])
		}
		nic := &n.NICs[i]
		if f[0] == "nic_pci" {
			nic.PCIPlace = topo.PCIPlace{BusID: f[2], NUMANode: p.int(f[3]), LocalCPUs: p.set(f[4]), SysPath: f[5]}
		} else {
			nic.Ports = append(nic.Ports, topo.IBPort{Number: p.int(f[2]), State: f[3], LinkLayer: f[4]})
		}
	default:
		return p.settingsFact(d, f)
	}
	return nil
}

// migDevice is a MIG device as the file has it (no cap minors).
func migDevice(gi, ci int, uuid string) gpu.MIGDevice {
	return gpu.MIGDevice{GI: gi, CI: ci, UUID: uuid, GICapMinor: -1, CICapMinor: -1}
}

// gpuFact adds a gpu_pci, gpu_mig or gpu_near line to g.
func (p *parser) gpuFact(g *topo.GPU, f []string) {
	switch f[0] {
	case "gpu_pci":
		g.BusID = f[2]
		g.Place = topo.PCIPlace{BusID: f[2], NUMANode: p.int(f[3]), LocalCPUs: p.set(f[4]), SysPath: f[5]}
	case "gpu_mig":
		g.MIG.Devices = append(g.MIG.Devices, migDevice(p.int(f[2]), p.int(f[3]), f[4]))
		g.MIG.Capable, g.MIG.Current, g.MIG.Pending = true, true, true
	case "gpu_near":
		g.NearNICs = append(g.NearNICs, topo.NearNIC{Name: f[2], Path: topo.PCIPath(f[3])})
	}
}
