package health

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"gpuprep/lib/host"
)

// Model is what one GPU model is expected to show ([models."<name>"] of the
// model file); a zero field is not set.
type Model struct {
	NVLinks   int    `toml:"nvlinks"`    // active NVLinks per GPU
	PCIeWidth int    `toml:"pcie_width"` // lanes
	PCIeSpeed string `toml:"pcie_speed"` // "32.0 GT/s PCIe"
	DriverMin string `toml:"driver_min"` // "535.104"
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
		return nil, fmt.Errorf("%s: unknown key %s (want models.\"<GPU name>\".{nvlinks,pcie_width,pcie_speed,driver_min})", name, und[0])
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
