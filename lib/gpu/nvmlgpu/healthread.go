package nvmlgpu

import (
	"encoding/binary"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

var (
	_ gpu.DriverReader   = (*NVML)(nil)
	_ gpu.FactsReader    = (*NVML)(nil)
	_ gpu.ProcessLister  = (*NVML)(nil)
	_ gpu.RecoveryReader = (*NVML)(nil)
)

// DriverVersion is nvmlSystemGetDriverVersion ("550.54.15").
func (b *NVML) DriverVersion() (string, error) {
	v, ret := b.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("nvml: driver version: %w", nvmlError(ret))
	}
	return v, nil
}

// ThrottleReasons is nvmlDeviceGetCurrentClocksEventReasons (the
// throttle-reason mask; the older GetCurrentClocksThrottleReasons name on
// drivers without it).
func (b *NVML) ThrottleReasons(index int) (uint64, error) {
	h, err := b.handle(index)
	if err != nil {
		return 0, err
	}
	v, ret := h.GetCurrentClocksEventReasons()
	if ret == nvml.ERROR_FUNCTION_NOT_FOUND {
		v, ret = h.GetCurrentClocksThrottleReasons()
	}
	if ret != nvml.SUCCESS {
		return 0, gpuError(h, index, "throttle reasons", ret)
	}
	return v, nil
}

// NVLinks counts links 0..NVLINK_MAX_LINKS-1 by nvmlDeviceGetNvLinkState:
// active (enabled) and total (every link NVML answers for). The walk stops
// at the first link NVML rejects, as nvlinkEnds does; a GPU without NVLink
// gives gpu.ErrUnsupported.
func (b *NVML) NVLinks(index int) (active, total int, err error) {
	h, err := b.handle(index)
	if err != nil {
		return 0, 0, err
	}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, ret := h.GetNvLinkState(l)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_FUNCTION_NOT_FOUND:
			if l == 0 {
				return 0, 0, fmt.Errorf("nvml: GPU %d: NVLink: %w", index, gpu.ErrUnsupported)
			}
			return active, total, nil
		default:
			return 0, 0, gpuError(h, index, fmt.Sprintf("NVLink %d state", l), ret)
		}
		total++
		if st == nvml.FEATURE_ENABLED {
			active++
		}
	}
	return active, total, nil
}

// Processes lists the PIDs of nvmlDeviceGetComputeRunningProcesses and
// GetGraphicsRunningProcesses, without repeats.
func (b *NVML) Processes(index int) ([]int, error) {
	h, err := b.handle(index)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var pids []int
	for _, get := range []struct {
		what string
		f    func() ([]nvml.ProcessInfo, nvml.Return)
	}{{"compute processes", h.GetComputeRunningProcesses}, {"graphics processes", h.GetGraphicsRunningProcesses}} {
		ps, ret := get.f()
		if ret == nvml.ERROR_NOT_SUPPORTED {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, gpuError(h, index, get.what, ret)
		}
		for _, p := range ps {
			if !seen[int(p.Pid)] {
				seen[int(p.Pid)] = true
				pids = append(pids, int(p.Pid))
			}
		}
	}
	return pids, nil
}

// RecoveryAction reads the field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION with
// nvmlDeviceGetFieldValues: an nvmlDeviceGpuRecoveryAction_t. A driver
// that does not know the field answers NOT_SUPPORTED (older ones
// INVALID_ARGUMENT) in the value's own return code, or for the call:
// gpu.ErrUnsupported.
func (b *NVML) RecoveryAction(index int) (gpu.RecoveryAction, error) {
	h, err := b.handle(index)
	if err != nil {
		return 0, err
	}
	vs := []nvml.FieldValue{{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION}}
	ret := h.GetFieldValues(vs)
	if ret == nvml.SUCCESS {
		ret = nvml.Return(vs[0].NvmlReturn)
	}
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_FUNCTION_NOT_FOUND:
		return 0, fmt.Errorf("nvml: GPU %d: recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): %w", index, gpu.ErrUnsupported)
	default:
		return 0, gpuError(h, index, "recovery action", ret)
	}
	v, err := fieldUint(vs[0])
	if err != nil {
		return 0, fmt.Errorf("nvml: GPU %d: recovery action: %w", index, err)
	}
	return gpu.RecoveryAction(v), nil
}

// fieldUint is a field value's unsigned integer, by its value type (NVML
// writes the union in the machine's byte order).
func fieldUint(v nvml.FieldValue) (uint64, error) {
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT, nvml.VALUE_TYPE_SIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(v.Value[:4])), nil
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(v.Value[:8]), nil
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(v.Value[:2])), nil
	}
	return 0, fmt.Errorf("value type %d is not an integer", v.ValueType)
}
