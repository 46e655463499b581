package hook

import (
	"errors"
	"fmt"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
)

// Fit says whether one profile's GPU values suit one GPU model of this
// node: what `--check-config` prints, so an admin learns before a job does
// which profiles a node type takes.
type Fit struct {
	Profile string
	Model   string // the GPU's product name as NVML reports it
	GPUs    int    // GPUs of that model on the node
	// Problems are the values the GPU refuses (above its highest clock,
	// outside its power range), one per knob; empty: the profile fits.
	Problems []Problem
}

// Problem is one GPU value a GPU refuses.
type Problem struct {
	Knob     string
	Required bool   // the profile requires the knob: the prolog fails without it
	Reason   string // the knob's error, naming the value and the GPU's limit
}

// Fatal says whether the prolog fails with this profile on this model: a
// required knob cannot be applied. Otherwise the prolog skips the values
// with a warning.
func (f Fit) Fatal() bool {
	for _, p := range f.Problems {
		if p.Required {
			return true
		}
	}
	return false
}

// ErrNoGPULimits is returned by ProfileFits when the backend cannot read
// what a GPU accepts (the procfs and none backends).
var ErrNoGPULimits = errors.New("the GPU backend cannot read what the GPUs accept")

// ProfileFits checks every profile that sets a GPU knob against one GPU of
// each model on the node, asking each knob what it would set (Desired,
// which checks the value against the GPU's power range and highest clocks
// at plan time, as the prolog does). Nothing is written.
func ProfileFits(cfg *config.Config, b gpu.Backend) ([]Fit, error) {
	if _, ok := gpu.As[gpu.SettingsReader](b); !ok {
		return nil, fmt.Errorf("%s: %w", b.Name(), ErrNoGPULimits)
	}
	devs, err := b.Devices()
	if err != nil {
		return nil, fmt.Errorf("gpu backend %s: %w", b.Name(), err)
	}
	var models []gpu.Device
	count := map[string]int{}
	for _, d := range devs {
		if count[d.Name] == 0 {
			models = append(models, d)
		}
		count[d.Name]++
	}
	var fits []Fit
	for _, name := range cfg.ProfileNames() {
		prof, err := cfg.Profile(name)
		if err != nil {
			return nil, err
		}
		if !setsGPUKnob(prof) {
			continue
		}
		for _, d := range models {
			f := Fit{Profile: name, Model: d.Name, GPUs: count[d.Name]}
			for _, k := range knob.GPUKnobs(b, d) {
				setting, ok := prof.Knobs.Setting(k.ID().Name)
				if !ok {
					continue
				}
				if _, err := k.Desired(setting); err != nil && !errors.Is(err, knob.ErrLeaveAlone) {
					name := k.ID().Name
					reason := name + ": " + strings.TrimPrefix(err.Error(), k.ID().String()+": ")
					f.Problems = append(f.Problems, Problem{Knob: name, Required: prof.IsRequired(name), Reason: reason})
				}
			}
			fits = append(fits, f)
		}
	}
	return fits, nil
}

func setsGPUKnob(p config.Profile) bool {
	for _, name := range knob.GPUKnobNames() {
		if p.Knobs.IsSet(name) {
			return true
		}
	}
	return false
}
