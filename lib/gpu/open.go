package gpu

import (
	"fmt"
	"strings"

	"gpuprep/lib/host"
)

// MockModels are the go-nvml mock servers mock:<model> accepts.
var MockModels = []string{"dgxa100", "dgxh100", "dgxh200", "dgxb200"}

// Specs lists every value Open accepts.
func Specs() []string {
	s := []string{"auto", "nvml", "procfs", "none"}
	for _, m := range MockModels {
		s = append(s, "mock:"+m)
	}
	return s
}

// Open returns the backend named by spec (the --gpu-backend flag):
//
//   - nvml: libnvidia-ml through go-nvml; ErrNoNVML where it is missing.
//   - procfs: /proc/driver/nvidia and sysfs under root; read-only.
//   - none: no GPUs.
//   - mock:<model>: go-nvml's mock server for model, completed from the node
//     shape of that model (see OpenMock).
//   - auto: nvml when root is the host's "/" and NVML loads and
//     initialises; else procfs when root has /proc/driver/nvidia/gpus; else
//     none. NVML only ever describes the machine it runs on, so a fixture
//     root never gets it. Name() tells which was chosen.
func Open(spec string, root host.Root) (Backend, error) {
	switch {
	case spec == "auto" || spec == "":
		return openAuto(root)
	case spec == "nvml":
		return OpenNVML(root)
	case spec == "procfs":
		return OpenProcfs(root), nil
	case spec == "none":
		return None{}, nil
	case strings.HasPrefix(spec, "mock:"):
		return OpenMock(strings.TrimPrefix(spec, "mock:"), root)
	}
	return nil, fmt.Errorf("gpu: unknown backend %q (want one of %s)", spec, strings.Join(Specs(), ", "))
}

func openAuto(root host.Root) (Backend, error) {
	if root.IsHost() {
		// Any NVML failure (no library, driver not loaded) falls through:
		// procfs may still list the GPUs.
		if b, err := OpenNVML(root); err == nil {
			return b, nil
		}
	}
	if root.Exists(procGPUs) {
		return OpenProcfs(root), nil
	}
	return None{}, nil
}
