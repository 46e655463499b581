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
// per GPU), which is what task-time code wants. It implements Inventory
// and MIGReader only: it cannot tell NVLinks (NVLinks nil), MIG profile
// names (Profile ""), settings or health.
type Procfs struct {
	root host.Root
	// autoWhy says why --gpu-backend auto chose procfs over NVML ("" when
	// procfs was asked for): AutoReason.
	autoWhy string
}

var (
	_ Backend   = (*Procfs)(nil)
	_ MIGReader = (*Procfs)(nil)
)

// OpenProcfs returns the procfs backend over root.
func OpenProcfs(root host.Root) *Procfs { return &Procfs{root: root} }

// Name is "procfs".
func (p *Procfs) Name() string { return "procfs" }

// Devices lists the GPUs of /proc/driver/nvidia/gpus/*/information, sorted
// by bus id, Index being the position in that order, with MIG from
// /proc/driver/nvidia/capabilities/gpu<minor>/mig. Where a GPU sits is
// lib/topo's to read.
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
			Minor: info.Minor,
			UUID:  info.UUID,
			BusID: info.BusID,
			Name:  info.Model,
		}
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

// MIG reads the MIG state of the GPU with the given index.
func (p *Procfs) MIG(index int) (MIGState, error) {
	devs, err := p.Devices()
	if err != nil {
		return MIGState{}, err
	}
	if index < 0 || index >= len(devs) {
		return MIGState{}, fmt.Errorf("procfs: no GPU %d (the node has %d)", index, len(devs))
	}
	return devs[index].MIG, nil
}

// Close does nothing.
func (p *Procfs) Close() error { return nil }
