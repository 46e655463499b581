package gpu

import "fmt"

// Health checks read a few GPU facts beyond Settings and Health. Each is a
// small optional interface, asked for with As; a backend that lacks one
// makes the check that needs it "skipped", never failed.

// Throttle reasons, NVML's nvmlClocksEventReason* bits. The ones the health
// check calls a problem are ThrottleHWSlowdown, ThrottleSWThermal,
// ThrottleHWThermal and ThrottleHWPowerBrake; GPU idle, application clocks
// and the software power cap are normal.
const (
	ThrottleGPUIdle      uint64 = 0x1
	ThrottleAppClocks    uint64 = 0x2
	ThrottleSWPowerCap   uint64 = 0x4
	ThrottleHWSlowdown   uint64 = 0x8
	ThrottleSyncBoost    uint64 = 0x10
	ThrottleSWThermal    uint64 = 0x20
	ThrottleHWThermal    uint64 = 0x40
	ThrottleHWPowerBrake uint64 = 0x80
	ThrottleDisplayClock uint64 = 0x100
	// ThrottleBad are the reasons that mean a sick GPU or node.
	ThrottleBad = ThrottleHWSlowdown | ThrottleSWThermal | ThrottleHWThermal | ThrottleHWPowerBrake
)

// ThrottleNames names the bits of a throttle-reason mask, lowest first.
func ThrottleNames(mask uint64) []string {
	names := []struct {
		bit  uint64
		name string
	}{
		{ThrottleGPUIdle, "gpu_idle"}, {ThrottleAppClocks, "app_clocks"}, {ThrottleSWPowerCap, "sw_power_cap"},
		{ThrottleHWSlowdown, "hw_slowdown"}, {ThrottleSyncBoost, "sync_boost"}, {ThrottleSWThermal, "sw_thermal"},
		{ThrottleHWThermal, "hw_thermal"}, {ThrottleHWPowerBrake, "hw_power_brake"}, {ThrottleDisplayClock, "display_clock"},
	}
	var out []string
	for _, n := range names {
		if mask&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// DriverReader reads the NVIDIA driver's version ("550.54.15").
type DriverReader interface {
	DriverVersion() (string, error)
}

// FactsReader reads the per-GPU facts the health checks need beyond
// Settings and Health.
type FactsReader interface {
	// ThrottleReasons is the GPU's current clock throttle-reason mask
	// (the Throttle* bits).
	ThrottleReasons(index int) (uint64, error)
	// NVLinks counts the GPU's NVLinks: active now, and all it has
	// (active or not). ErrUnsupported for a GPU without NVLink.
	NVLinks(index int) (active, total int, err error)
}

// ProcessLister lists the processes using a GPU (compute and graphics), by
// PID, for the epilog's leftover-process check.
type ProcessLister interface {
	Processes(index int) ([]int, error)
}

// RecoveryAction is what the driver says a GPU needs before it is usable
// again: NVML's nvmlDeviceGpuRecoveryAction_t, read from the field
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (drivers from R565 on keep it; Xid
// 154 logs each change). Only RecoveryNone is a healthy GPU.
type RecoveryAction uint32

// Recovery actions, NVML's values.
const (
	RecoveryNone              RecoveryAction = 0 // NVML_GPU_RECOVERY_ACTION_NONE
	RecoveryGPUReset          RecoveryAction = 1 // NVML_GPU_RECOVERY_ACTION_GPU_RESET
	RecoveryNodeReboot        RecoveryAction = 2 // NVML_GPU_RECOVERY_ACTION_NODE_REBOOT
	RecoveryDrainP2P          RecoveryAction = 3 // NVML_GPU_RECOVERY_ACTION_DRAIN_P2P
	RecoveryDrainAndReset     RecoveryAction = 4 // NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET
	RecoveryRecoverIMEXDomain RecoveryAction = 5 // NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN
	RecoveryBusReset          RecoveryAction = 6 // NVML_GPU_RECOVERY_ACTION_BUS_RESET
	RecoverySystemReboot      RecoveryAction = 7 // NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT
)

var recoveryNames = map[RecoveryAction]string{
	RecoveryNone: "none", RecoveryGPUReset: "GPU reset", RecoveryNodeReboot: "node reboot",
	RecoveryDrainP2P: "drain peer-to-peer traffic", RecoveryDrainAndReset: "drain and reset",
	RecoveryRecoverIMEXDomain: "recover the IMEX domain", RecoveryBusReset: "bus reset", RecoverySystemReboot: "system reboot",
}

// String names the action as a person says it: "none", "GPU reset",
// "node reboot", "drain and reset"; "action 0x9" for one NVML added later.
func (a RecoveryAction) String() string {
	if s, ok := recoveryNames[a]; ok {
		return s
	}
	return fmt.Sprintf("action 0x%x", uint32(a))
}

// MarshalText writes the action by name, as String does.
func (a RecoveryAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads a name String gives, or "action 0x9".
func (a *RecoveryAction) UnmarshalText(b []byte) error {
	for v, s := range recoveryNames {
		if s == string(b) {
			*a = v
			return nil
		}
	}
	var n uint32
	if _, err := fmt.Sscanf(string(b), "action 0x%x", &n); err != nil {
		return fmt.Errorf("recovery action %q: not one NVML names", b)
	}
	*a = RecoveryAction(n)
	return nil
}

// RecoveryReader reads the driver's recovery action for one GPU. A
// backend without it (procfs: the driver's files do not show it) does not
// implement it; a driver without the field gives ErrUnsupported.
type RecoveryReader interface {
	RecoveryAction(index int) (RecoveryAction, error)
}

// Load is what a GPU runs at now: its SM and memory clocks and its power
// draw (0 when not known).
type Load struct {
	SMClockMHz  uint32
	MemClockMHz uint32
	PowerMW     uint32
}

// LoadReader reads a GPU's clocks and power now, for the speed probes,
// which report them with each value they measure.
type LoadReader interface {
	Load(index int) (Load, error)
}
