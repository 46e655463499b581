package nvmlgpu

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gpuprep/lib/gpu"
)

// RecoveryAction reads NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: the value by
// its type; a field or call the driver does not support (NOT_SUPPORTED,
// an older driver's INVALID_ARGUMENT, no such function) is
// gpu.ErrUnsupported; any other failure (a lost GPU) an error naming the
// GPU.
func TestRecoveryAction(t *testing.T) {
	field := func(callRet, valueRet nvml.Return, typ nvml.ValueType, v uint64) *NVML {
		dev := &mock.Device{
			GetFieldValuesFunc: func(vs []nvml.FieldValue) nvml.Return {
				for i := range vs {
					if vs[i].FieldId != nvml.FI_DEV_GET_GPU_RECOVERY_ACTION {
						t.Errorf("field %d asked for", vs[i].FieldId)
					}
					vs[i].NvmlReturn, vs[i].ValueType = uint32(valueRet), uint32(typ)
					binary.NativeEndian.PutUint64(vs[i].Value[:], v)
				}
				return callRet
			},
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST },
		}
		return &NVML{handles: map[int]nvml.Device{0: dev}}
	}
	for _, c := range []struct {
		name     string
		b        *NVML
		want     gpu.RecoveryAction
		unsupp   bool
		errMatch string
	}{
		{"none", field(nvml.SUCCESS, nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, 0), gpu.RecoveryNone, false, ""},
		{"GPU reset", field(nvml.SUCCESS, nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, 1), gpu.RecoveryGPUReset, false, ""},
		{"drain and reset, unsigned long long", field(nvml.SUCCESS, nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 4), gpu.RecoveryDrainAndReset, false, ""},
		{"field not supported", field(nvml.SUCCESS, nvml.ERROR_NOT_SUPPORTED, 0, 0), 0, true, ""},
		{"old driver: unknown field", field(nvml.SUCCESS, nvml.ERROR_INVALID_ARGUMENT, 0, 0), 0, true, ""},
		{"call not supported", field(nvml.ERROR_NOT_SUPPORTED, nvml.SUCCESS, 0, 0), 0, true, ""},
		{"GPU lost", field(nvml.SUCCESS, nvml.ERROR_GPU_IS_LOST, 0, 0), 0, false, "nvml: GPU 0 (bus id unknown): recovery action: "},
		{"not an integer", field(nvml.SUCCESS, nvml.SUCCESS, nvml.VALUE_TYPE_DOUBLE, 0), 0, false, "value type 0 is not an integer"},
	} {
		got, err := c.b.RecoveryAction(0)
		switch {
		case c.unsupp && !errors.Is(err, gpu.ErrUnsupported):
			t.Errorf("%s: %v %v, want unsupported", c.name, got, err)
		case c.errMatch != "" && (err == nil || errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), c.errMatch)):
			t.Errorf("%s: %v %v, want an error with %q", c.name, got, err, c.errMatch)
		case !c.unsupp && c.errMatch == "" && (err != nil || got != c.want):
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
}

// The actions' names, and their JSON form (the health state keeps each
// GPU's last one), both ways.
func TestRecoveryActionNames(t *testing.T) {
	for a, want := range map[gpu.RecoveryAction]string{0: "none", 1: "GPU reset", 2: "node reboot", 4: "drain and reset", 9: "action 0x9"} {
		b, err := a.MarshalText()
		if a.String() != want || err != nil || string(b) != want {
			t.Errorf("%d: %q %q %v, want %q", uint32(a), a.String(), b, err, want)
		}
		var back gpu.RecoveryAction
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Errorf("%q read back as %v (%v)", b, back, err)
		}
	}
	var a gpu.RecoveryAction
	if err := a.UnmarshalText([]byte("reboot please")); err == nil {
		t.Error("an unknown name read")
	}
}
