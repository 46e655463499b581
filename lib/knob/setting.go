package knob

import (
	"fmt"
	"strconv"

	"gpuprep/lib/config"
)

// Setting returns the setting k gives the knob with the given key name, in
// the string form Desired takes; ok is false when k leaves the knob alone
// (or no knob has that name). Strings are as written; integers in decimal
// (cstate_max_latency_us may be "-1", which Desired answers with
// ErrLeaveAlone); gpu_persistence "on"/"off"; gpu_locked_clocks_mhz
// "<min>,<max>" or "unlocked" for []; gpu_app_clocks_mhz "<mem>,<sm>" or
// "default" for {}; gpu_power_limit_w watts, or "default" for 0.
func Setting(k config.Knobs, name string) (string, bool) {
	str := func(p *string) (string, bool) {
		if p == nil {
			return "", false
		}
		return *p, true
	}
	num := func(p *int) (string, bool) {
		if p == nil {
			return "", false
		}
		return strconv.Itoa(*p), true
	}
	switch name {
	case "cpu_governor":
		return str(k.CPUGovernor)
	case "energy_performance_preference":
		return str(k.EnergyPerformancePreference)
	case "cstate_max_latency_us":
		return num(k.CStateMaxLatencyUS)
	case "thp_enabled":
		return str(k.THPEnabled)
	case "thp_defrag":
		return str(k.THPDefrag)
	case "vm_swappiness":
		return num(k.VMSwappiness)
	case "vm_dirty_ratio":
		return num(k.VMDirtyRatio)
	case "vm_dirty_background_ratio":
		return num(k.VMDirtyBackgroundRatio)
	case "vm_zone_reclaim_mode":
		return num(k.VMZoneReclaimMode)
	case "kernel_numa_balancing":
		return num(k.KernelNUMABalancing)
	case "gpu_persistence":
		if k.GPUPersistence == nil {
			return "", false
		}
		return string(onOff(*k.GPUPersistence)), true
	case "gpu_compute_mode":
		return str(k.GPUComputeMode)
	case "gpu_locked_clocks_mhz":
		if k.GPULockedClocksMHz == nil {
			return "", false
		}
		if r := *k.GPULockedClocksMHz; !r.Reset() {
			return fmt.Sprintf("%d,%d", r.Min, r.Max), true
		}
		return "unlocked", true
	case "gpu_app_clocks_mhz":
		if k.GPUAppClocksMHz == nil {
			return "", false
		}
		if c := *k.GPUAppClocksMHz; !c.Reset() {
			return fmt.Sprintf("%d,%d", c.MemMHz, c.SMMHz), true
		}
		return "default", true
	case "gpu_power_limit_w":
		if k.GPUPowerLimitW == nil {
			return "", false
		}
		if *k.GPUPowerLimitW == 0 {
			return "default", true
		}
		return strconv.Itoa(*k.GPUPowerLimitW), true
	}
	return "", false
}
