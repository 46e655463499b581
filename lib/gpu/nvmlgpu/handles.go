package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// handle returns GPU index's NVML handle (index being gpuprep's: the
// position in PCI bus order), opening it on first use by PCI bus id
// (nvmlDeviceGetHandleByPciBusId_v2). Safe for concurrent use.
func (b *NVML) handle(index int) (nvml.Device, error) {
	b.mu.Lock()
	h, ok := b.handles[index]
	b.mu.Unlock()
	if ok {
		return h, nil
	}
	busID, err := b.busIDOf(index)
	if err != nil {
		return nil, err
	}
	h, ret := b.lib.DeviceGetHandleByPciBusId(busID)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: GPU %d: %w", index, nvmlError(ret))
	}
	b.mu.Lock()
	b.handles[index] = h
	b.mu.Unlock()
	return h, nil
}

// busIDOf is the bus id of GPU index, listing the GPUs first if need be
// (a full NVML listing opens every handle, and then this is not reached).
func (b *NVML) busIDOf(index int) (string, error) {
	b.mu.Lock()
	devs := b.devs
	b.mu.Unlock()
	if devs == nil {
		var err error
		if devs, err = b.Devices(); err != nil {
			return "", err
		}
	}
	for _, d := range devs {
		if d.Index == index {
			return d.BusID, nil
		}
	}
	return "", fmt.Errorf("nvml: no GPU %d (the node has %d)", index, len(devs))
}

// listed records the inventory and the handles opened while listing.
func (b *NVML) listed(devs []gpu.Device, handles map[int]nvml.Device) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.devs = devs
	for i, h := range handles {
		b.handles[i] = h
	}
}
