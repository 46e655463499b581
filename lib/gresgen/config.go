package gresgen

import (
	"encoding/json"
	"io"

	"gpuprep/lib/config"
)

// OptionsFromConfig takes the [gres] settings. numaFlag is --numa-as-socket
// (True or False; "" when not given) and wins over [gres] numa_as_socket,
// whose default is Auto; --node-name (nodeName) wins too.
func OptionsFromConfig(cfg *config.Config, numaFlag config.Tristate, nodeName string) Options {
	opt := Options{NodeName: nodeName}
	mode := config.Auto
	if cfg != nil {
		opt.Name = cfg.Gres.Name
		opt.TypeNames = cfg.Gres.TypeNames
		if cfg.Gres.NUMAAsSocket != "" {
			mode = cfg.Gres.NUMAAsSocket
		}
		if p, err := cfg.Profile(cfg.Selection.DefaultProfile); err == nil {
			opt.Housekeeping, _ = p.Setting("housekeeping_cpus")
		}
	}
	if numaFlag != "" {
		mode = numaFlag
	}
	opt.NUMAAsSocket = mode == config.True
	opt.NUMAAsSocketAuto = mode == config.Auto
	return opt
}

// WriteDifferencesJSON prints --check's result as JSON.
func WriteDifferencesJSON(w io.Writer, file string, diffs []Difference) error {
	if diffs == nil {
		diffs = []Difference{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		File        string       `json:"file"`
		Matches     bool         `json:"matches"`
		Differences []Difference `json:"differences"`
	}{file, len(diffs) == 0, diffs})
}
