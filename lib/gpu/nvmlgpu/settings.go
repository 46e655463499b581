package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// getter records one NVML read: NOT_SUPPORTED names the fields in
// Unsupported, any other failure is kept as the first error.
type getter struct {
	h           nvml.Device
	index       int
	unsupported []string
	err         error
}

func (g *getter) ok(ret nvml.Return, what string, fields ...string) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		g.unsupported = append(g.unsupported, fields...)
	default:
		if g.err == nil {
			g.err = gpuError(g.h, g.index, what, ret)
		}
	}
	return false
}

// Settings reads the fields of a GPU's settings that want names:
// nvmlDeviceGetPersistenceMode, GetComputeMode, GetApplicationsClock (SM,
// memory), GetPowerManagementLimit and GetPowerManagementDefaultLimit,
// GetEccMode, and the limits: GetPowerManagementLimitConstraints and
// GetMaxClockInfo (SM, memory).
func (b *NVML) Settings(index int, want gpu.Fields) (gpu.Settings, error) {
	var s gpu.Settings
	h, err := b.handle(index)
	if err != nil {
		return s, err
	}
	g := &getter{h: h, index: index}
	if want&gpu.FieldPersistence != 0 {
		if v, ret := h.GetPersistenceMode(); g.ok(ret, "persistence mode", "persistence") {
			s.Persistence = v == nvml.FEATURE_ENABLED
		}
	}
	if want&gpu.FieldComputeMode != 0 {
		if v, ret := h.GetComputeMode(); g.ok(ret, "compute mode", "compute_mode") {
			s.ComputeMode = computeModeName(v)
		}
	}
	if want&gpu.FieldAppClocks != 0 {
		if v, ret := h.GetApplicationsClock(nvml.CLOCK_SM); g.ok(ret, "application SM clock", "app_clock_sm_mhz") {
			s.AppClockSMMHz = v
		}
		if v, ret := h.GetApplicationsClock(nvml.CLOCK_MEM); g.ok(ret, "application memory clock", "app_clock_mem_mhz") {
			s.AppClockMemMHz = v
		}
	}
	if want&gpu.FieldPowerLimit != 0 {
		if v, ret := h.GetPowerManagementLimit(); g.ok(ret, "power limit", "power_limit_mw") {
			s.PowerLimitMW = v
		}
		if v, ret := h.GetPowerManagementDefaultLimit(); g.ok(ret, "default power limit", "default_power_limit_mw") {
			s.DefaultPowerMW = v
		}
	}
	if want&gpu.FieldLimits != 0 {
		if lo, hi, ret := h.GetPowerManagementLimitConstraints(); g.ok(ret, "power limit range", "min_power_limit_mw", "max_power_limit_mw") {
			s.MinPowerMW, s.MaxPowerMW = lo, hi
		}
		if v, ret := h.GetMaxClockInfo(nvml.CLOCK_SM); g.ok(ret, "maximum SM clock", "max_sm_clock_mhz") {
			s.MaxSMClockMHz = v
		}
		if v, ret := h.GetMaxClockInfo(nvml.CLOCK_MEM); g.ok(ret, "maximum memory clock", "max_mem_clock_mhz") {
			s.MaxMemClockMHz = v
		}
	}
	if want&gpu.FieldECC != 0 {
		if cur, pend, ret := h.GetEccMode(); g.ok(ret, "ECC mode", "ecc_enabled", "ecc_pending") {
			s.ECCEnabled = cur == nvml.FEATURE_ENABLED
			s.ECCPending = pend == nvml.FEATURE_ENABLED
		}
	}
	s.Unsupported = g.unsupported
	return s, g.err
}

// Health reads a GPU's error counters: nvmlDeviceGetTotalEccErrors
// (uncorrected, volatile and aggregate), GetRetiredPages (both causes),
// GetRetiredPagesPendingStatus and GetRemappedRows. Ampere and later GPUs
// remap rows instead of retiring pages, so retired pages are unsupported there.
func (b *NVML) Health(index int) (gpu.Health, error) {
	var hl gpu.Health
	h, err := b.handle(index)
	if err != nil {
		return hl, err
	}
	g := &getter{h: h, index: index}
	if v, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); g.ok(ret, "volatile uncorrected ECC errors", "ecc_volatile_uncorrected") {
		hl.ECCVolatileUncorrected = v
	}
	if v, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); g.ok(ret, "aggregate uncorrected ECC errors", "ecc_aggregate_uncorrected") {
		hl.ECCAggregateUncorrected = v
	}
	if sbe, ret := h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS); g.ok(ret, "retired pages", "retired_pages") {
		if dbe, ret := h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR); g.ok(ret, "retired pages", "retired_pages") {
			hl.RetiredPages = len(sbe) + len(dbe)
		}
	}
	if v, ret := h.GetRetiredPagesPendingStatus(); g.ok(ret, "retired pages pending", "retired_pages_pending") {
		hl.RetiredPagesPending = v == nvml.FEATURE_ENABLED
	}
	if _, _, pending, failed, ret := h.GetRemappedRows(); g.ok(ret, "remapped rows", "remapped_rows_pending", "remapping_failed") {
		hl.RemappedRowsPending = pending
		hl.RemappingFailed = failed
	}
	hl.Unsupported = g.unsupported
	return hl, g.err
}

func computeModeName(m nvml.ComputeMode) gpu.ComputeMode {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return gpu.ComputeDefault
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return gpu.ComputeExclusiveProcess
	case nvml.COMPUTEMODE_PROHIBITED:
		return gpu.ComputeProhibited
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return gpu.ComputeMode("exclusive_thread")
	}
	return gpu.ComputeMode(fmt.Sprintf("unknown(%d)", int(m)))
}

func nvmlComputeMode(m gpu.ComputeMode) (nvml.ComputeMode, bool) {
	switch m {
	case gpu.ComputeDefault:
		return nvml.COMPUTEMODE_DEFAULT, true
	case gpu.ComputeExclusiveProcess:
		return nvml.COMPUTEMODE_EXCLUSIVE_PROCESS, true
	case gpu.ComputeProhibited:
		return nvml.COMPUTEMODE_PROHIBITED, true
	}
	return 0, false
}
