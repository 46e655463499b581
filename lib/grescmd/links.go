package grescmd

import (
	"fmt"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
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
// cannot read NVLinks (res.LinksUnknown): it names the backend and why
// auto did not use NVML (gpu.AutoReason: NVML's own error, kept from the
// one attempt). An explicit procfs (flag or config) is the admin's choice,
// not a silent fallback: ok is false.
func linksWarning(spec, by string, backend gpu.Backend, root host.Root) (w gresgen.Warning, ok bool) {
	const left = "Links= left out"
	why, fell := gpu.AutoReason(backend)
	switch {
	case spec != "auto" || !fell:
		return gresgen.Warning{}, false
	case !root.IsHost():
		return gresgen.Warning{
			Msg: fmt.Sprintf("%s: GPU backend auto (%s) chose %s, which cannot read NVLinks: %s", left, by, backend.Name(), why),
		}, true
	}
	return gresgen.Warning{
		Msg: fmt.Sprintf("%s: GPU backend auto (%s) fell back from NVML to %s, which cannot read NVLinks (%s)", left, by, backend.Name(), why),
		Fix: "make NVML load (the driver's libnvidia-ml.so.1) and run gpuprep-gres again",
	}, true
}
