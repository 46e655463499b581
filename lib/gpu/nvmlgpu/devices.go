package nvmlgpu

import (
	"fmt"
	"sort"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// Devices lists the node's GPUs sorted by PCI bus id, Index being the
// position in that order (as for every backend), once per backend.
//
// With Light and a root that has /proc/driver/nvidia/gpus, the list is the
// driver's (see gpu.Procfs) and costs no NVML call. Otherwise it is NVML's:
// nvmlDeviceGetCount, then per GPU, in parallel, a handle
// (nvmlDeviceGetHandleByIndex) and what Device holds: UUID, minor number,
// PCI info, name, NVLink ends (not with Light) and MIG mode (plus MIG devices
// when MIG is on).
func (b *NVML) Devices() ([]gpu.Device, error) {
	b.mu.Lock()
	devs := b.devs
	b.mu.Unlock()
	if devs != nil {
		return devs, nil
	}
	if b.light && b.root.Exists("/proc/driver/nvidia/gpus") {
		devs, err := gpu.OpenProcfs(b.root).Devices()
		if err != nil {
			return nil, err
		}
		if devs == nil {
			devs = []gpu.Device{}
		}
		b.listed(devs, nil)
		return devs, nil
	}
	devs, handles, err := b.listNVML()
	if err != nil {
		return nil, err
	}
	b.listed(devs, handles)
	return devs, nil
}

// listNVML is Devices from NVML; the handles it opened come back keyed by
// the position in bus order.
func (b *NVML) listNVML() ([]gpu.Device, map[int]nvml.Device, error) {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, nil, fmt.Errorf("nvml: device count: %w", nvmlError(ret))
	}
	devs := make([]gpu.Device, n)
	hs := make([]nvml.Device, n)
	ends := make([][]linkEnd, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devs[i], hs[i], ends[i], errs[i] = b.listOne(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	if err := b.fillMIGMinors(devs); err != nil {
		return nil, nil, err
	}
	if !b.light {
		busIDs := make([]string, n)
		for i := range devs {
			busIDs[i] = devs[i].BusID
		}
		links := countNVLinks(busIDs, ends)
		for i := range devs {
			devs[i].NVLinks = links[i]
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, c int) bool { return devs[order[a]].BusID < devs[order[c]].BusID })
	sorted := make([]gpu.Device, n)
	handles := make(map[int]nvml.Device, n)
	for pos, i := range order {
		sorted[pos] = devs[i]
		sorted[pos].Index = pos
		handles[pos] = hs[i]
	}
	if !b.light {
		// NVLinks[j] must follow the new order too.
		for pos := range sorted {
			row := make([]int, n)
			for j, i := range order {
				row[j] = devs[order[pos]].NVLinks[i]
			}
			sorted[pos].NVLinks = row
		}
	}
	return sorted, handles, nil
}

// listOne opens NVML GPU i and reads its Device.
func (b *NVML) listOne(i int) (gpu.Device, nvml.Device, []linkEnd, error) {
	h, ret := b.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return gpu.Device{}, nil, nil, fmt.Errorf("nvml: GPU %d: %w", i, nvmlError(ret))
	}
	d, err := identity(h, i)
	if err != nil {
		return d, nil, nil, err
	}
	var ends []linkEnd
	if !b.light {
		if ends, err = nvlinkEnds(h, i); err != nil {
			return d, nil, nil, err
		}
	}
	if d.MIG, err = migState(h, i, b.opt.Real); err != nil {
		return d, nil, nil, err
	}
	return d, h, ends, nil
}

// identity reads one GPU's identity: nvmlDeviceGetUUID, GetMinorNumber,
// GetPciInfo and GetName. Where it sits is lib/topo's to read (sysfs).
func identity(h nvml.Device, i int) (gpu.Device, error) {
	d := gpu.Device{Index: i}
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
	return d, nil
}

// fillMIGMinors sets the cap minors of every MIG device from root's
// mig-minors (or the backend's stand-in), read once and only when a GPU has
// MIG devices.
func (b *NVML) fillMIGMinors(devs []gpu.Device) error {
	var minors gpu.MIGMinors
	read := false
	for i := range devs {
		d := &devs[i]
		if len(d.MIG.Devices) == 0 {
			continue
		}
		if !read {
			m, err := gpu.ReadMIGMinors(b.root)
			if err != nil {
				return err
			}
			if m == nil && b.opt.FallbackMIGMinors != nil {
				m = b.opt.FallbackMIGMinors()
			}
			minors, read = m, true
		}
		for k := range d.MIG.Devices {
			m := &d.MIG.Devices[k]
			m.GICapMinor = minors.GI(d.Minor, m.GI)
			m.CICapMinor = minors.CI(d.Minor, m.GI, m.CI)
		}
	}
	return nil
}

// MIG reads the MIG state of GPU index from NVML, cap minors included.
func (b *NVML) MIG(index int) (gpu.MIGState, error) {
	h, err := b.handle(index)
	if err != nil {
		return gpu.MIGState{}, err
	}
	st, err := migState(h, index, b.opt.Real)
	if err != nil {
		return st, err
	}
	devs := []gpu.Device{{MIG: st}}
	if all, err := b.Devices(); err == nil && index < len(all) {
		devs[0].Minor = all[index].Minor
	}
	if err := b.fillMIGMinors(devs); err != nil {
		return st, err
	}
	return devs[0].MIG, nil
}
