package gpu

import (
	"fmt"
	"sort"

	"gpuprep/lib/host"
)

// procGPUs is where the driver lists its GPUs, one folder per PCI address.
const procGPUs = "/proc/driver/nvidia/gpus"

// Procfs is the backend that needs no NVML: the driver's procfs files and
// sysfs, read through a root. It is read-only and fast (a few small files
// per GPU), which is what task-time code wants. It cannot tell NVLinks
// (NVLinks nil), MIG profile names (Profile "") or settings.
type Procfs struct {
	root host.Root
}

var _ Backend = (*Procfs)(nil)

// OpenProcfs returns the procfs backend over root.
func OpenProcfs(root host.Root) *Procfs { return &Procfs{root: root} }

// Name is "procfs".
func (p *Procfs) Name() string { return "procfs" }

// Devices lists the GPUs of /proc/driver/nvidia/gpus/*/information, sorted
// by bus id, Index being the position in that order. NUMA node and CPU
// affinity come from /sys/bus/pci/devices/<bus>/numa_node and local_cpulist
// (affinity is read even when numa_node is -1), memory NUMA nodes from
// /proc/driver/nvidia/gpus/<bus>/numa_status, MIG from
// /proc/driver/nvidia/capabilities/gpu<minor>/mig.
func (p *Procfs) Devices() ([]Device, error) {
	files, err := p.root.Glob(procGPUs + "/*/information")
	if err != nil {
		return nil, fmt.Errorf("procfs: %w", err)
	}
	devs := make([]Device, 0, len(files))
	for _, f := range files {
		b, err := p.root.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("procfs: %w", err)
		}
		info, err := parseInformation(f, b)
		if err != nil {
			return nil, fmt.Errorf("procfs: %w", err)
		}
		d := Device{
			Minor:    info.Minor,
			UUID:     info.UUID,
			BusID:    info.BusID,
			Name:     info.Model,
			NUMANode: pciNUMANode(p.root, info.BusID),
		}
		if d.CPUAffinity, err = pciLocalCPUs(p.root, info.BusID); err != nil {
			return nil, fmt.Errorf("procfs: %w", err)
		}
		d.MemoryNUMANodes = gpuMemoryNUMANodes(p.root, info.BusID)
		if d.MIG, err = procMIG(p.root, info.Minor); err != nil {
			return nil, fmt.Errorf("procfs: %w", err)
		}
		devs = append(devs, d)
	}
	sort.Slice(devs, func(a, b int) bool { return devs[a].BusID < devs[b].BusID })
	for i := range devs {
		devs[i].Index = i
	}
	return devs, nil
}

// Settings is not available without NVML.
func (p *Procfs) Settings(index int) (Settings, error) {
	return Settings{}, fmt.Errorf("procfs: GPU %d settings: %w", index, ErrUnsupported)
}

// Health is not available without NVML.
func (p *Procfs) Health(index int) (Health, error) {
	return Health{}, fmt.Errorf("procfs: GPU %d health: %w", index, ErrUnsupported)
}

func (p *Procfs) readOnly(index int, what string) error {
	return fmt.Errorf("procfs: GPU %d: %s: %w", index, what, ErrReadOnly)
}

// SetPersistence returns ErrReadOnly.
func (p *Procfs) SetPersistence(index int, on bool) error {
	return p.readOnly(index, "set persistence mode")
}

// SetComputeMode returns ErrReadOnly.
func (p *Procfs) SetComputeMode(index int, mode ComputeMode) error {
	return p.readOnly(index, "set compute mode")
}

// SetApplicationClocks returns ErrReadOnly.
func (p *Procfs) SetApplicationClocks(index int, memMHz, smMHz uint32) error {
	return p.readOnly(index, "set application clocks")
}

// ResetApplicationClocks returns ErrReadOnly.
func (p *Procfs) ResetApplicationClocks(index int) error {
	return p.readOnly(index, "reset application clocks")
}

// SetLockedClocks returns ErrReadOnly.
func (p *Procfs) SetLockedClocks(index int, minMHz, maxMHz uint32) error {
	return p.readOnly(index, "lock clocks")
}

// ResetLockedClocks returns ErrReadOnly.
func (p *Procfs) ResetLockedClocks(index int) error {
	return p.readOnly(index, "reset locked clocks")
}

// SetPowerLimit returns ErrReadOnly.
func (p *Procfs) SetPowerLimit(index int, milliwatts uint32) error {
	return p.readOnly(index, "set power limit")
}

// Close does nothing.
func (p *Procfs) Close() error { return nil }
