package nvmlgpu

import (
	"fmt"
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

var (
	_ gpu.AccountingSetter = (*NVML)(nil)
	_ gpu.AccountingReader = (*NVML)(nil)
)

// AccountingMode is nvmlDeviceGetAccountingMode. A GPU in MIG mode, where
// NVML keeps accounting off and cannot turn it on, is gpu.ErrUnsupported
// saying so (migRefusesAccounting).
func (b *NVML) AccountingMode(index int) (bool, error) {
	h, err := b.handle(index)
	if err != nil {
		return false, err
	}
	if err := migRefusesAccounting(h, index); err != nil {
		return false, err
	}
	v, ret := h.GetAccountingMode()
	if ret != nvml.SUCCESS {
		return false, gpuError(h, index, "accounting mode", ret)
	}
	return v == nvml.FEATURE_ENABLED, nil
}

// SetAccountingMode is nvmlDeviceSetAccountingMode; turning it off clears
// every process's record. A GPU in MIG mode is gpu.ErrUnsupported, as for
// AccountingMode.
func (b *NVML) SetAccountingMode(index int, on bool) error {
	mode := nvml.FEATURE_DISABLED
	if on {
		mode = nvml.FEATURE_ENABLED
	}
	h, err := b.handle(index)
	if err != nil {
		return err
	}
	if err := migRefusesAccounting(h, index); err != nil {
		return err
	}
	if ret := h.SetAccountingMode(mode); ret != nvml.SUCCESS {
		return gpuError(h, index, fmt.Sprintf("set accounting mode %v", on), ret)
	}
	return nil
}

// migRefusesAccounting says, as an error wrapping gpu.ErrUnsupported,
// that the GPU is in MIG mode (nvmlDeviceGetMigMode, current mode), where
// NVML keeps accounting off; nil for any other GPU, including one whose
// MIG mode cannot be read (NVML then answers for accounting itself).
func migRefusesAccounting(h nvml.Device, index int) error {
	cur, _, ret := h.GetMigMode()
	if ret != nvml.SUCCESS || cur != nvml.DEVICE_MIG_ENABLE {
		return nil
	}
	return fmt.Errorf("nvml: GPU %d (%s): accounting: the GPU is in MIG mode, where NVML keeps accounting off: %w",
		index, busOf(h), gpu.ErrUnsupported)
}

// AccountingStats lists the processes of nvmlDeviceGetAccountingPids, each
// with its nvmlDeviceGetAccountingStats, in NVML's order. A process whose
// record the circular buffer dropped between the two calls (NOT_FOUND) is
// left out. Accounting off, or not on this GPU, is NOT_SUPPORTED:
// gpu.ErrUnsupported.
func (b *NVML) AccountingStats(index int) ([]gpu.ProcessAccounting, error) {
	h, err := b.handle(index)
	if err != nil {
		return nil, err
	}
	pids, ret := h.GetAccountingPids()
	if ret != nvml.SUCCESS {
		return nil, gpuError(h, index, "accounting pids", ret)
	}
	out := make([]gpu.ProcessAccounting, 0, len(pids))
	for _, pid := range pids {
		st, ret := h.GetAccountingStats(uint32(pid))
		switch ret {
		case nvml.SUCCESS:
			out = append(out, processAccounting(pid, st))
		case nvml.ERROR_NOT_FOUND:
		default:
			return nil, gpuError(h, index, fmt.Sprintf("accounting stats of pid %d", pid), ret)
		}
	}
	return out, nil
}

// processAccounting is one nvmlAccountingStats_t: startTime in µs since
// the epoch, time in ms, NVML_VALUE_NOT_AVAILABLE as gpu.NotAvailable (the
// percentages) or 0 (the memory).
func processAccounting(pid int, st nvml.AccountingStats) gpu.ProcessAccounting {
	pct := func(v uint32) int {
		if v == math.MaxUint32 {
			return gpu.NotAvailable
		}
		return int(v)
	}
	mem := st.MaxMemoryUsage
	if mem == math.MaxUint64 {
		mem = 0
	}
	return gpu.ProcessAccounting{
		PID:            pid,
		Start:          time.UnixMicro(int64(st.StartTime)),
		Running:        st.IsRunning != 0,
		Duration:       time.Duration(st.Time) * time.Millisecond,
		GPUUtilPct:     pct(st.GpuUtilization),
		MemoryUtilPct:  pct(st.MemoryUtilization),
		MaxMemoryBytes: mem,
	}
}
