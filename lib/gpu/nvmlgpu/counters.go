package nvmlgpu

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

var _ gpu.CountersReader = (*NVML)(nil)

// counterFields are the NVML field ids of the counters (see gpu.Counter).
var counterFields = map[gpu.Counter]uint32{
	gpu.EnergyMJ:          nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION,
	gpu.PowerCapNs:        nvml.FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP,
	gpu.SWThermalNs:       nvml.FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN,
	gpu.HWThermalNs:       nvml.FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
	gpu.PowerBrakeNs:      nvml.FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN,
	gpu.SyncBoostNs:       nvml.FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST,
	gpu.ECCCorrected:      nvml.FI_DEV_ECC_SBE_VOL_TOTAL,
	gpu.ECCUncorrected:    nvml.FI_DEV_ECC_DBE_VOL_TOTAL,
	gpu.RemappedCorrect:   nvml.FI_DEV_REMAPPED_COR,
	gpu.RemappedUncorrect: nvml.FI_DEV_REMAPPED_UNC,
	gpu.PCIeReplays:       nvml.FI_DEV_PCIE_REPLAY_COUNTER,
	gpu.NVLinkCRCFlit:     nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
	gpu.NVLinkCRCData:     nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
	gpu.NVLinkReplays:     nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
	gpu.NVLinkRecoveries:  nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
}

// CounterField is the NVML field id (NVML_FI_DEV_*) Counters reads c from;
// false for a name that is not a gpu.Counter.
func CounterField(c gpu.Counter) (uint32, bool) {
	id, ok := counterFields[c]
	return id, ok
}

// Counters reads GPU index's gpu.AllCounters in one nvmlDeviceGetFieldValues
// call. A field whose own return code is not SUCCESS, or whose value is
// negative or not a number, is listed in Missing; the energy field alone
// then falls back to nvmlDeviceGetTotalEnergyConsumption. Only a failure of
// the whole call is an error.
func (b *NVML) Counters(index int) (gpu.Counters, error) {
	h, err := b.handle(index)
	if err != nil {
		return gpu.Counters{}, err
	}
	vs := make([]nvml.FieldValue, len(gpu.AllCounters))
	for i, c := range gpu.AllCounters {
		vs[i].FieldId = counterFields[c]
	}
	if ret := h.GetFieldValues(vs); ret != nvml.SUCCESS {
		return gpu.Counters{}, gpuError(h, index, "counters (field values)", ret)
	}
	cs := gpu.Counters{Values: make(map[gpu.Counter]uint64, len(vs))}
	for i, c := range gpu.AllCounters {
		v, ok := counterValue(vs[i])
		if !ok && c == gpu.EnergyMJ {
			v, ok = totalEnergy(h)
		}
		if ok {
			cs.Values[c] = v
		} else {
			cs.Missing = append(cs.Missing, c)
		}
	}
	return cs, nil
}

// totalEnergy is nvmlDeviceGetTotalEnergyConsumption (mJ), where the
// energy field value is not answered.
func totalEnergy(h nvml.Device) (uint64, bool) {
	v, ret := h.GetTotalEnergyConsumption()
	return v, ret == nvml.SUCCESS
}

// counterValue is a field value as a counter, by its value type (NVML
// writes the nvmlValue_t union in the machine's byte order): false when the
// field's nvmlReturn is not SUCCESS, the value is negative or not a number,
// or the type is unknown.
func counterValue(v nvml.FieldValue) (uint64, bool) {
	if nvml.Return(v.NvmlReturn) != nvml.SUCCESS {
		return 0, false
	}
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		f := math.Float64frombits(binary.NativeEndian.Uint64(b))
		if !(f >= 0 && f < math.MaxUint64) { // NaN too
			return 0, false
		}
		return uint64(f), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG: // 64-bit long on Linux
		return binary.NativeEndian.Uint64(b), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return nonNegative(int64(binary.NativeEndian.Uint64(b)))
	case nvml.VALUE_TYPE_SIGNED_INT:
		return nonNegative(int64(int32(binary.NativeEndian.Uint32(b))))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(b)), true
	}
	return 0, false
}

// nonNegative is a signed value as a counter: false when negative.
func nonNegative(n int64) (uint64, bool) {
	if n < 0 {
		return 0, false
	}
	return uint64(n), true
}
