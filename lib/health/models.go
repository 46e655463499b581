package health

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"gpuprep/lib/host"
	"gpuprep/lib/probe"
)

// Model is what one GPU model is expected to show ([models."<name>"] of the
// model file); a zero field is not set.
type Model struct {
	NVLinks   int    `toml:"nvlinks"`    // active NVLinks per GPU
	PCIeWidth int    `toml:"pcie_width"` // lanes
	PCIeSpeed string `toml:"pcie_speed"` // "32.0 GT/s PCIe"
	DriverMin string `toml:"driver_min"` // "535.104"
	// What the probes (gpuprep-health --probe) hold the model to: what
	// it is built for, GB/s (memory; one NVLink, one way), and floors that
	// replace the ones [health] probe_floor makes of those.
	HBMGBps    float64 `toml:"hbm_gbps"`
	NVLinkGBps float64 `toml:"nvlink_gbps"`
	MinH2DGBps float64 `toml:"min_h2d_gbps"`
	MinHBMGBps float64 `toml:"min_hbm_gbps"`
	MinP2PGBps float64 `toml:"min_p2p_gbps"`
	MinTFLOPS  float64 `toml:"min_tflops"`
}

// ProbeFloors is what m sets for the probes.
func (m Model) ProbeFloors() probe.ModelFloors {
	return probe.ModelFloors{HBMGBps: m.HBMGBps, NVLinkGBps: m.NVLinkGBps, MinH2DGBps: m.MinH2DGBps,
		MinHBMGBps: m.MinHBMGBps, MinP2PGBps: m.MinP2PGBps, MinTFLOPS: m.MinTFLOPS}
}

// probeKeys are the model file's probe settings, for its errors.
var probeKeys = []string{"hbm_gbps", "nvlink_gbps", "min_h2d_gbps", "min_hbm_gbps", "min_p2p_gbps", "min_tflops"}

// checkProbeKeys checks that the probe settings are 0 (not set) or a
// positive rate under 1e6.
func checkProbeKeys(name, model string, m Model) error {
	for i, v := range []float64{m.HBMGBps, m.NVLinkGBps, m.MinH2DGBps, m.MinHBMGBps, m.MinP2PGBps, m.MinTFLOPS} {
		if v < 0 || v >= 1e6 {
			return fmt.Errorf("%s: models.%q.%s = %g: must be 0 (not set) or a positive rate", name, model, probeKeys[i], v)
		}
	}
	return nil
}

// Models maps NVML's product name ("NVIDIA H100 80GB HBM3") to its Model.
type Models map[string]Model

// LoadModels reads the per-model file ([health] model_file): a regular file
// under 1 MiB, TOML with one [models."<name>"] table per GPU model. Unknown
// keys and bad values are errors naming the file (and the line where the
// TOML parser gives one). "" is no file.
func LoadModels(path string) (Models, error) {
	if path == "" {
		return nil, nil
	}
	data, _, err := host.ReadRegular(path, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("health model file: %w", err)
	}
	return ParseModels(path, data)
}

// ParseModels parses a model file's content; name is the file for errors.
func ParseModels(name string, data []byte) (Models, error) {
	var f struct {
		Models Models `toml:"models"`
	}
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", name, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: unknown key %s (want models.\"<GPU name>\".{nvlinks,pcie_width,pcie_speed,driver_min,%s})", name, und[0], strings.Join(probeKeys, ","))
	}
	for n, m := range f.Models {
		switch {
		case m.NVLinks < 0 || m.NVLinks > 64:
			return nil, fmt.Errorf("%s: models.%q.nvlinks = %d: must be 0..64", name, n, m.NVLinks)
		case m.PCIeWidth < 0 || m.PCIeWidth > 32:
			return nil, fmt.Errorf("%s: models.%q.pcie_width = %d: must be 0..32", name, n, m.PCIeWidth)
		case m.DriverMin != "" && !validVersion(m.DriverMin):
			return nil, fmt.Errorf("%s: models.%q.driver_min = %q: must be a version such as \"550.54.15\"", name, n, m.DriverMin)
		}
		if err := checkProbeKeys(name, n, m); err != nil {
			return nil, err
		}
		if m.PCIeSpeed != "" {
			if _, err := ParseLinkSpeed(m.PCIeSpeed); err != nil {
				return nil, fmt.Errorf("%s: models.%q.pcie_speed: %w", name, n, err)
			}
		}
	}
	return f.Models, nil
}

// For is the entry for a GPU model name: exact, else case-insensitive.
func (ms Models) For(name string) (Model, bool) {
	if m, ok := ms[name]; ok {
		return m, true
	}
	for k, m := range ms {
		if strings.EqualFold(k, name) {
			return m, true
		}
	}
	return Model{}, false
}
