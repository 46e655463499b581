package gresgen

import (
	"encoding/json"
	"io"

	"gpuprep/lib/config"
)

// OptionsFromConfig takes the [gres] settings. numaFlag is --numa-as-socket
// (True or False; "" when not given) and wins over [gres] numa_as_socket,
// whose default is Auto: follow what slurmd will count (Options.Slurmd, from
// the node's slurm.conf); --node-name (nodeName) wins too.
func OptionsFromConfig(cfg *config.Config, numaFlag config.Tristate, nodeName string) Options {
	opt := Options{NodeName: nodeName}
	mode, by := config.Auto, ""
	if cfg != nil {
		opt.Name = cfg.Gres.Name
		opt.TypeNames = cfg.Gres.TypeNames
		opt.MPSGPUs, opt.MPSCount = cfg.Gres.MPSGPUs, cfg.Gres.MPSCount
		if cfg.Gres.NUMAAsSocket != "" {
			mode, by = cfg.Gres.NUMAAsSocket, "[gres] numa_as_socket = "+string(cfg.Gres.NUMAAsSocket)
		}
		if p, err := cfg.Profile(cfg.Selection.DefaultProfile); err == nil {
			opt.Housekeeping, _ = p.Setting("housekeeping_cpus")
		}
	}
	if numaFlag != "" {
		mode, by = numaFlag, "--numa-as-socket"
		if numaFlag == config.False {
			by += "=false"
		}
	}
	switch mode {
	case config.True:
		opt.Sockets, opt.SocketsBy = SocketsNUMA, by
	case config.False:
		opt.Sockets, opt.SocketsBy = SocketsReal, by
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
