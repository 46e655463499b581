package nvmlgpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// Load reads the GPU's current SM and memory clocks (nvmlDeviceGetClockInfo)
// and power draw (nvmlDeviceGetPowerUsage). A value the GPU does not report
// is left 0; an error only when none could be read.
func (b *NVML) Load(index int) (gpu.Load, error) {
	h, err := b.handle(index)
	if err != nil {
		return gpu.Load{}, err
	}
	var l gpu.Load
	sm, retSM := h.GetClockInfo(nvml.CLOCK_SM)
	if retSM == nvml.SUCCESS {
		l.SMClockMHz = sm
	}
	if mem, ret := h.GetClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
		l.MemClockMHz = mem
	}
	if mw, ret := h.GetPowerUsage(); ret == nvml.SUCCESS {
		l.PowerMW = mw
	}
	if l == (gpu.Load{}) {
		return l, gpuError(h, index, "clocks and power", retSM)
	}
	return l, nil
}
