package gpu

import (
	"fmt"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Devices lists the GPUs NVML sees (nvmlDeviceGetCount,
// nvmlDeviceGetHandleByIndex), sorted by PCI bus id. Per GPU it reads only
// what Device holds: UUID, minor number, PCI info, name, NUMA node, CPU
// affinity, NVLink ends and MIG mode (plus MIG devices when MIG is on).
func (b *NVML) Devices() ([]Device, error) {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: device count: %w", nvmlError(ret))
	}
	var minors MIGMinors
	minorsRead := false
	devs := make([]Device, n)
	ends := make([][]linkEnd, n)
	for i := 0; i < n; i++ {
		h, err := b.handle(i)
		if err != nil {
			return nil, err
		}
		d, err := b.device(h, i)
		if err != nil {
			return nil, err
		}
		if !b.skipLinks {
			if ends[i], err = nvlinkEnds(h, i); err != nil {
				return nil, err
			}
		}
		if d.MIG, err = migState(h, i, b.real); err != nil {
			return nil, err
		}
		if len(d.MIG.Devices) > 0 {
			if !minorsRead {
				if minors, err = b.readMIGMinors(); err != nil {
					return nil, err
				}
				minorsRead = true
			}
			for k := range d.MIG.Devices {
				m := &d.MIG.Devices[k]
				m.GICapMinor = minors.GI(d.Minor, m.GI)
				m.CICapMinor = minors.CI(d.Minor, m.GI, m.CI)
			}
		}
		devs[i] = d
	}
	busIDs := make([]string, n)
	for i := range devs {
		busIDs[i] = devs[i].BusID
	}
	if !b.skipLinks {
		links := countNVLinks(busIDs, ends)
		for i := range devs {
			devs[i].NVLinks = links[i]
		}
	}
	sort.SliceStable(devs, func(a, c int) bool { return devs[a].BusID < devs[c].BusID })
	return devs, nil
}

// device reads one GPU's identity and locality: nvmlDeviceGetUUID,
// GetMinorNumber, GetPciInfo, GetName, GetNumaNodeId (else the PCI device's
// numa_node), the PCI device's local_cpulist (else GetCpuAffinity) and the
// driver's numa_status (memory NUMA nodes).
func (b *NVML) device(h nvml.Device, i int) (Device, error) {
	d := Device{Index: i}
	var ret nvml.Return
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("nvml: GPU %d: uuid: %w", i, nvmlError(ret))
	}
	if d.Minor, ret = h.GetMinorNumber(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("nvml: GPU %d (%s): minor number: %w", i, d.UUID, nvmlError(ret))
	}
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return d, fmt.Errorf("nvml: GPU %d (%s): PCI info: %w", i, d.UUID, nvmlError(ret))
	}
	d.BusID = busIDOf(pci)
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("nvml: GPU %d (%s): name: %w", i, d.BusID, nvmlError(ret))
	}
	d.NUMANode, ret = h.GetNumaNodeId()
	if ret != nvml.SUCCESS {
		// NOT_SUPPORTED in VMs and on older drivers (FUNCTION_NOT_FOUND).
		d.NUMANode = pciNUMANode(b.root, d.BusID)
	}
	// The PCI device's local_cpulist is what NVML's affinity is made of on
	// Linux, and costs microseconds where the first nvmlDeviceGetCpuAffinity
	// of a process costs about 17 ms (measured on the 2x H200 node). NVML is
	// asked only when sysfs does not say (a mock on a root without the
	// device).
	cpus, err := pciLocalCPUs(b.root, d.BusID)
	if err != nil {
		return d, fmt.Errorf("nvml: GPU %d (%s): %w", i, d.BusID, err)
	}
	d.CPUAffinity = cpus
	if cpus.IsEmpty() {
		mask, ret := h.GetCpuAffinity(b.cpuWords())
		switch ret {
		case nvml.SUCCESS:
			d.CPUAffinity = cpusFromWords(mask)
		case nvml.ERROR_NOT_SUPPORTED:
		default:
			return d, fmt.Errorf("nvml: GPU %d (%s): CPU affinity: %w", i, d.BusID, nvmlError(ret))
		}
	}
	d.MemoryNUMANodes = gpuMemoryNUMANodes(b.root, d.BusID)
	return d, nil
}

// cpuWords is the size of the CPU mask passed to nvmlDeviceGetCpuAffinity:
// ceil(NCPU/64) unsigned longs, NCPU from /sys/devices/system/cpu/possible.
func (b *NVML) cpuWords() int {
	n := b.ncpu
	if n == 0 {
		n = possibleCPUs(b.root)
	}
	if n <= 0 {
		n = 1024
	}
	return (n + 63) / 64
}

// readMIGMinors is the root's mig-minors, or the backend's stand-in.
func (b *NVML) readMIGMinors() (MIGMinors, error) {
	m, err := ReadMIGMinors(b.root)
	if err != nil {
		return nil, err
	}
	if m == nil && b.fallbackMinors != nil {
		m = b.fallbackMinors()
	}
	return m, nil
}
