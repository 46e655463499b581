package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// set runs one NVML setter on GPU index; a failure names the GPU (index and
// bus id), the operation and NVML's error string, and wraps the
// nvml.Return (NOT_SUPPORTED also matches ErrUnsupported).
func (b *NVML) set(index int, what string, call func(nvml.Device) nvml.Return) error {
	h, err := b.handle(index)
	if err != nil {
		return err
	}
	if ret := call(h); ret != nvml.SUCCESS {
		return gpuError(h, index, what, ret)
	}
	return nil
}

// SetPersistence is nvmlDeviceSetPersistenceMode.
func (b *NVML) SetPersistence(index int, on bool) error {
	mode := nvml.FEATURE_DISABLED
	if on {
		mode = nvml.FEATURE_ENABLED
	}
	return b.set(index, fmt.Sprintf("set persistence mode %v", on), func(h nvml.Device) nvml.Return {
		return h.SetPersistenceMode(mode)
	})
}

// SetComputeMode is nvmlDeviceSetComputeMode.
func (b *NVML) SetComputeMode(index int, mode gpu.ComputeMode) error {
	m, ok := nvmlComputeMode(mode)
	if !ok {
		return fmt.Errorf("nvml: GPU %d: unknown compute mode %q (want %s, %s or %s)",
			index, mode, gpu.ComputeDefault, gpu.ComputeExclusiveProcess, gpu.ComputeProhibited)
	}
	return b.set(index, "set compute mode "+string(mode), func(h nvml.Device) nvml.Return {
		return h.SetComputeMode(m)
	})
}

// SetApplicationClocks is nvmlDeviceSetApplicationsClocks.
func (b *NVML) SetApplicationClocks(index int, memMHz, smMHz uint32) error {
	return b.set(index, fmt.Sprintf("set application clocks mem %d MHz, SM %d MHz", memMHz, smMHz), func(h nvml.Device) nvml.Return {
		return h.SetApplicationsClocks(memMHz, smMHz)
	})
}

// ResetApplicationClocks is nvmlDeviceResetApplicationsClocks.
func (b *NVML) ResetApplicationClocks(index int) error {
	return b.set(index, "reset application clocks", func(h nvml.Device) nvml.Return {
		return h.ResetApplicationsClocks()
	})
}

// SetLockedClocks is nvmlDeviceSetGpuLockedClocks.
func (b *NVML) SetLockedClocks(index int, minMHz, maxMHz uint32) error {
	return b.set(index, fmt.Sprintf("lock SM clock to %d-%d MHz", minMHz, maxMHz), func(h nvml.Device) nvml.Return {
		return h.SetGpuLockedClocks(minMHz, maxMHz)
	})
}

// ResetLockedClocks is nvmlDeviceResetGpuLockedClocks.
func (b *NVML) ResetLockedClocks(index int) error {
	return b.set(index, "reset locked clocks", func(h nvml.Device) nvml.Return {
		return h.ResetGpuLockedClocks()
	})
}

// SetPowerLimit is nvmlDeviceSetPowerManagementLimit.
func (b *NVML) SetPowerLimit(index int, milliwatts uint32) error {
	return b.set(index, fmt.Sprintf("set power limit %d mW", milliwatts), func(h nvml.Device) nvml.Return {
		return h.SetPowerManagementLimit(milliwatts)
	})
}
