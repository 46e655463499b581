package gpumock

import (
	"encoding/binary"
	"encoding/json"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Faults are what a test injects into a mock GPU for the health checks. In
// a test holding the backend, SetFaults applies them; across processes (a
// prolog run by Slurm in an e2e test), a mock opened on a fixture root reads
// them from <root>/run/gpuprep-mock/<uuid>.faults.json at open.
type Faults struct {
	ECCVolatileUncorrected uint64 `json:"ecc_volatile_uncorrected,omitempty"`
	RemappingFailed        bool   `json:"remapping_failed,omitempty"`
	RemappedRowsPending    bool   `json:"remapped_rows_pending,omitempty"`
	ThrottleReasons        uint64 `json:"throttle_reasons,omitempty"` // added to gpu_idle
	NVLinksDown            int    `json:"nvlinks_down,omitempty"`     // the first N active links read inactive
	Processes              []int  `json:"processes,omitempty"`        // compute processes on the GPU
	// RecoveryAction is what NVML's field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
	// reads (an nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node
	// reboot, 3 drain P2P, 4 drain and reset); RecoveryUnsupported makes
	// the field NOT_SUPPORTED, as on a driver that lacks it.
	RecoveryAction      int  `json:"recovery_action,omitempty"`
	RecoveryUnsupported bool `json:"recovery_unsupported,omitempty"`
}

// FaultsFile is where a mock on a fixture root reads a GPU's faults.
func FaultsFile(root host.Root, uuid string) string {
	return root.Path("/run/gpuprep-mock/" + uuid + ".faults.json")
}

// installHealth fills the health calls the dgx mocks leave unset, healthy
// (throttle reasons: GPU idle only; no processes), and applies the faults
// file of the GPU, if root has one.
func installHealth(d *server.Device, root host.Root) {
	var f Faults
	if !root.IsHost() {
		if b, err := os.ReadFile(FaultsFile(root, d.UUID)); err == nil {
			_ = json.Unmarshal(b, &f) // a test's file; garbage means no faults
		}
	}
	installFileCounters(d, root)
	SetFaults(d, f)
}

// SetFaults makes mock GPU d read as f says (the zero Faults: healthy). The
// NVLink fault wraps d's present NVLink state function, so call it once per
// device.
func SetFaults(d *server.Device, f Faults) {
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
			return f.ECCVolatileUncorrected, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		return 0, 0, f.RemappedRowsPending, f.RemappingFailed, nvml.SUCCESS
	}
	reasons := func() (uint64, nvml.Return) { return gpu.ThrottleGPUIdle | f.ThrottleReasons, nvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = reasons
	d.GetCurrentClocksThrottleReasonsFunc = reasons
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		var ps []nvml.ProcessInfo
		for _, p := range f.Processes {
			ps = append(ps, nvml.ProcessInfo{Pid: uint32(p), UsedGpuMemory: 1 << 30})
		}
		return ps, nvml.SUCCESS
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	next := d.GetFieldValuesFunc // the counters (counters.go)
	d.GetFieldValuesFunc = func(vs []nvml.FieldValue) nvml.Return { return fieldValues(vs, f, next) }
	if f.NVLinksDown > 0 && d.GetNvLinkStateFunc != nil {
		state := d.GetNvLinkStateFunc
		d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			st, ret := state(l)
			if ret == nvml.SUCCESS && l < f.NVLinksDown {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return st, ret
		}
	}
}

// fieldValues answers nvmlDeviceGetFieldValues as the driver does: each
// value's own return code, NOT_SUPPORTED for a field the mock does not
// keep. It answers NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, an unsigned int,
// and passes the other fields down to next (the counters' layer).
func fieldValues(vs []nvml.FieldValue, f Faults, next func([]nvml.FieldValue) nvml.Return) nvml.Return {
	passDown(vs, next)
	for i := range vs {
		v := &vs[i]
		if v.FieldId != nvml.FI_DEV_GET_GPU_RECOVERY_ACTION {
			continue
		}
		if f.RecoveryUnsupported {
			v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			continue
		}
		v.NvmlReturn, v.ValueType = uint32(nvml.SUCCESS), uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
		binary.NativeEndian.PutUint32(v.Value[:4], uint32(f.RecoveryAction))
	}
	return nvml.SUCCESS
}
