package knob

import (
	"fmt"

	"gpuprep/lib/gpu"
)

// gpuControl is what the GPU knobs need of a backend: read settings and
// change them. A backend without both (procfs, none) gets readOnlyGPU, so
// its GPU knobs read as unsupported.
type gpuControl interface {
	gpu.SettingsReader
	gpu.Setter
}

// controlOf is b's gpuControl, or a stand-in that answers unsupported.
func controlOf(b gpu.Backend) gpuControl {
	if c, ok := b.(gpuControl); ok {
		return c
	}
	return readOnlyGPU{name: b.Name()}
}

// fieldsOf is the gpu.Fields holding the named Settings fields (the names
// Settings.Unsupported uses).
func fieldsOf(names []string) gpu.Fields {
	var f gpu.Fields
	for _, n := range names {
		switch n {
		case "persistence":
			f |= gpu.FieldPersistence
		case "compute_mode":
			f |= gpu.FieldComputeMode
		case "app_clock_sm_mhz", "app_clock_mem_mhz":
			f |= gpu.FieldAppClocks
		case "power_limit_mw", "default_power_limit_mw":
			f |= gpu.FieldPowerLimit
		case "ecc_enabled", "ecc_pending":
			f |= gpu.FieldECC
		case "min_power_limit_mw", "max_power_limit_mw", "max_sm_clock_mhz", "max_mem_clock_mhz":
			f |= gpu.FieldLimits
		}
	}
	return f
}

// readOnlyGPU stands for a backend that can neither read nor change GPU
// settings.
type readOnlyGPU struct{ name string }

func (r readOnlyGPU) Settings(index int, _ gpu.Fields) (gpu.Settings, error) {
	return gpu.Settings{}, fmt.Errorf("%s: GPU %d settings: %w", r.name, index, gpu.ErrUnsupported)
}

func (r readOnlyGPU) readOnly(index int, what string) error {
	return fmt.Errorf("%s: GPU %d: %s: %w", r.name, index, what, gpu.ErrReadOnly)
}

func (r readOnlyGPU) SetPersistence(index int, _ bool) error {
	return r.readOnly(index, "set persistence mode")
}

func (r readOnlyGPU) SetComputeMode(index int, _ gpu.ComputeMode) error {
	return r.readOnly(index, "set compute mode")
}

func (r readOnlyGPU) SetApplicationClocks(index int, _, _ uint32) error {
	return r.readOnly(index, "set application clocks")
}

func (r readOnlyGPU) ResetApplicationClocks(index int) error {
	return r.readOnly(index, "reset application clocks")
}

func (r readOnlyGPU) SetLockedClocks(index int, _, _ uint32) error {
	return r.readOnly(index, "lock clocks")
}

func (r readOnlyGPU) ResetLockedClocks(index int) error {
	return r.readOnly(index, "reset locked clocks")
}

func (r readOnlyGPU) SetPowerLimit(index int, _ uint32) error {
	return r.readOnly(index, "set power limit")
}

// limits reads what the GPU accepts (gpu.FieldLimits); ok is false when the
// backend cannot tell, and then nothing is checked at plan time (the
// driver still refuses a bad value at apply time).
func (k *gpuKnob) limits() (gpu.Settings, bool) {
	s, err := k.b.Settings(k.index, gpu.FieldLimits)
	return s, err == nil && len(s.Unsupported) == 0
}
