package gpu

// Counter names a GPU's cumulative counter, as Counters.Values keys it and
// the per-job evidence (lib/evidence) reports it. Each is read from one
// NVML field value (nvmlDeviceGetFieldValues, every field in one call):
// the field is named beside it. All count from the driver's load (a
// driver reload restarts them), except the remapped rows, which the GPU
// keeps.
type Counter string

// The counters a job's evidence reads.
const (
	// EnergyMJ is the GPU's energy since the driver was loaded, in mJ
	// (NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION; nvmlDeviceGetTotalEnergyConsumption).
	EnergyMJ Counter = "energy_mj"

	// Nanoseconds the clocks were held down, by reason (the cumulative
	// clock-event counters; nvmlDeviceGetViolationStatus is deprecated in
	// NVML 13).
	PowerCapNs   Counter = "power_cap_ns"   // NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP
	SWThermalNs  Counter = "sw_thermal_ns"  // NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN
	HWThermalNs  Counter = "hw_thermal_ns"  // NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN
	PowerBrakeNs Counter = "power_brake_ns" // NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN
	SyncBoostNs  Counter = "sync_boost_ns"  // NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST

	// Errors.
	ECCCorrected      Counter = "ecc_corrected"     // NVML_FI_DEV_ECC_SBE_VOL_TOTAL (volatile)
	ECCUncorrected    Counter = "ecc_uncorrected"   // NVML_FI_DEV_ECC_DBE_VOL_TOTAL (volatile)
	RemappedCorrect   Counter = "remapped_rows_cor" // NVML_FI_DEV_REMAPPED_COR (kept by the GPU)
	RemappedUncorrect Counter = "remapped_rows_unc" // NVML_FI_DEV_REMAPPED_UNC (kept by the GPU)
	PCIeReplays       Counter = "pcie_replays"      // NVML_FI_DEV_PCIE_REPLAY_COUNTER
	NVLinkCRCFlit     Counter = "nvlink_crc_flit"   // NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL
	NVLinkCRCData     Counter = "nvlink_crc_data"   // NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL
	NVLinkReplays     Counter = "nvlink_replays"    // NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL
	NVLinkRecoveries  Counter = "nvlink_recoveries" // NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL
)

// ThrottleCounters are the clock-event counters, in the order a report
// lists them.
var ThrottleCounters = []Counter{PowerCapNs, SWThermalNs, HWThermalNs, PowerBrakeNs, SyncBoostNs}

// ErrorCounters are the error counters, in the order a report lists them.
var ErrorCounters = []Counter{ECCCorrected, ECCUncorrected, RemappedCorrect, RemappedUncorrect,
	PCIeReplays, NVLinkCRCFlit, NVLinkCRCData, NVLinkReplays, NVLinkRecoveries}

// AllCounters are every counter Counters reads.
var AllCounters = append(append([]Counter{EnergyMJ}, ThrottleCounters...), ErrorCounters...)

// Counters are one GPU's cumulative counters, read at one time. A counter
// the GPU or driver does not have (NOT_SUPPORTED), or that failed to read,
// is absent from Values and named in Missing: never read as zero.
type Counters struct {
	Values  map[Counter]uint64 `json:"values"`
	Missing []Counter          `json:"missing,omitempty"`
}

// CountersReader reads a physical GPU's cumulative counters (index is
// Device.Index). The counters belong to the GPU, not to a MIG device.
type CountersReader interface {
	Counters(index int) (Counters, error)
}
