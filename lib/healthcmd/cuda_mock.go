//go:build gpuprep_mock

package healthcmd

import (
	"strings"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/cuda"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// A build with -tags gpuprep_mock probes a mock GPU backend's GPUs with a
// fake CUDA driver (gpumock.FakeCUDA): the demo and the end-to-end tests.
func init() {
	real := openCUDA
	openCUDA = func(backend string, root host.Root, devs []gpu.Device) (cuda.Driver, error) {
		if strings.HasPrefix(backend, "mock:") {
			return gpumock.FakeCUDA(root, devs), nil
		}
		return real(backend, root, devs)
	}
}
