package grescmd

import (
	"fmt"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"strings"
)

// backendChoice is the GPU backend asked for and where it came from: the
// --gpu-backend flag, else the config's general.gpu_backend, else auto
// (what cli.Common.OpenGPU opens).
func backendChoice(flag string, cfg *config.Config) (spec, by string) {
	switch {
	case flag != "":
		return flag, "--gpu-backend"
	case cfg != nil && cfg.General.GPUBackend != "":
		return cfg.General.GPUBackend, "general.gpu_backend"
	}
	return "auto", "the default"
}

// linksWarning is the one warning for a gres.conf whose records have no
// Links= because --gpu-backend auto fell back from NVML to a backend that
// cannot read NVLinks (res.LinksUnknown): it names the backend and why NVML
// was not used. On the host that is NVML's own error, got by opening it
// again (auto keeps it only when it falls back to none): this runs only
// after that fallback. An explicit procfs (flag or config) is the admin's
// choice, not a silent fallback: ok is false.
func linksWarning(spec, by, backend string, root host.Root) (w gresgen.Warning, ok bool) {
	const left = "Links= left out"
	switch {
	case spec != "auto":
		return gresgen.Warning{}, false
	case !root.IsHost():
		return gresgen.Warning{
			Msg: fmt.Sprintf("%s: GPU backend auto (%s) chose %s, which cannot read NVLinks: auto never uses NVML with --root %s (NVML sees this machine's GPUs, not the root's)", left, by, backend, root.Dir()),
		}, true
	}
	var why string
	if b, err := gpu.Open("nvml", root); err != nil {
		why = "NVML did not load: " + strings.TrimPrefix(err.Error(), "nvml: ")
	} else {
		b.Close()
		why = "NVML did not load at first (it loads now)"
	}
	return gresgen.Warning{
		Msg: fmt.Sprintf("%s: GPU backend auto (%s) fell back from NVML to %s, which cannot read NVLinks (%s)", left, by, backend, why),
		Fix: "make NVML load (the driver's libnvidia-ml.so.1) and run gpuprep-gres again",
	}, true
}
