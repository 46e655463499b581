package gresgen

import (
	"encoding/json"
	"io"

	"gpuprep/lib/config"
)

// OptionsFromConfig takes the [gres] settings; the command-line
// --numa-as-socket and --node-name win over them.
func OptionsFromConfig(cfg *config.Config, numaAsSocket bool, nodeName string) Options {
	opt := Options{NUMAAsSocket: numaAsSocket, NodeName: nodeName}
	if cfg != nil {
		opt.Name = cfg.Gres.Name
		opt.TypeNames = cfg.Gres.TypeNames
		if cfg.Gres.NUMAAsSocket == config.True {
			opt.NUMAAsSocket = true
		}
	}
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
