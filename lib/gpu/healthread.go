package gpu

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
