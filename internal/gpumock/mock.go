// Package gpumock is the GPU backend over go-nvml's dgx mock servers,
// completed to agree with gpuprep's simulated node shapes and their fixture
// roots. It is for tests and demos: it registers "mock:<model>" with
// lib/gpu when imported, which test packages do and production binaries do
// not (only a build with -tags gpuprep_mock links it in).
package gpumock

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/internal/nodeshape"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

// mockModel is what gpuprep adds to one of go-nvml's dgx mock servers:
// the server constructor and GPU, and the board facts the mock leaves out.
// Clocks and power are the products' published defaults, near enough for a
// simulation.
type mockModel struct {
	newServer func(...gpus.Config) *server.Server
	gpu       gpus.Config
	maxLinks  int // NVLinks a GPU of this generation has
	// Application clocks (MHz): default SM and memory, and the SM range.
	appSM, appMem, minSM, maxSM uint32
	// Power limits (mW): default, and the range SetPowerManagementLimit takes.
	power, minPower, maxPower uint32
}

// Models are the go-nvml mock servers mock:<model> accepts.
var Models = []string{"dgxa100", "dgxh100", "dgxh200", "dgxb200"}

func init() {
	gpu.Register("mock", Models, func(model string, root host.Root) (gpu.Backend, error) { return Open(model, root) })
}

var mockModels = map[string]mockModel{
	"dgxa100": {dgxa100.NewWithGPUs, gpus.A100_SXM4_40GB, 12, 1095, 1215, 210, 1410, 400000, 100000, 400000},
	"dgxh100": {dgxh100.NewWithGPUs, gpus.H100_SXM5_80GB, 18, 1755, 2619, 345, 1980, 700000, 200000, 700000},
	"dgxh200": {dgxh200.NewWithGPUs, gpus.H200_SXM5_141GB, 18, 1755, 3201, 345, 1980, 700000, 200000, 700000},
	"dgxb200": {dgxb200.NewWithGPUs, gpus.B200_SXM5_180GB, 18, 1965, 3996, 120, 1965, 1000000, 200000, 1000000},
}

// Open returns the nvml backend over go-nvml's mock server for model
// (dgxa100, dgxh100, dgxh200, dgxb200), named "mock:<model>". The server is
// completed from the node shape whose GPUModel is model (nodeshape.All), so
// that it agrees with that shape's fixture root: one GPU per shape GPU with
// its bus id, UUID, minor, name, NVLinks and MIG
// instances, and in-memory persistence, compute mode, clocks, power, ECC
// and error counters whose setters change what the getters read.
//
// It needs no libnvidia-ml and reads no kernel file, except that MIG cap
// minors come from root's mig-minors when it has one (so that mock and
// procfs agree on a fixture root); otherwise from the driver's fixed table.
func Open(model string, root host.Root) (*nvmlgpu.NVML, error) {
	m, ok := mockModels[model]
	if !ok {
		return nil, fmt.Errorf("gpu: unknown mock %q (want one of %s)", model, strings.Join(Models, ", "))
	}
	shape, ok := mockShape(model)
	if !ok {
		return nil, fmt.Errorf("gpu: mock %s: no node shape pairs with it", model)
	}
	srv, err := buildMock(m, shape, root)
	if err != nil {
		return nil, fmt.Errorf("gpu: mock %s: %w", model, err)
	}
	return nvmlgpu.New(srv, root, nvmlgpu.Options{
		Name:              "mock:" + model,
		FallbackMIGMinors: func() gpu.MIGMinors { return driverMIGMinors(shape) },
	})
}

// mockShape is the first shape whose GPUModel is model.
func mockShape(model string) (nodeshape.Shape, bool) {
	for _, s := range nodeshape.All() {
		if s.GPUModel == model {
			return s, true
		}
	}
	return nodeshape.Shape{}, false
}

// buildMock makes the server with one GPU per shape GPU and completes each.
func buildMock(m mockModel, shape nodeshape.Shape, root host.Root) (*server.Server, error) {
	srv := m.newServer(gpus.Multiple(len(shape.GPUs), m.gpu)...)
	devs := make([]*server.Device, len(srv.Devices))
	for i, d := range srv.Devices {
		devs[i] = d.(*server.Device)
	}
	for i, d := range devs {
		completeDevice(d, i, m, shape, devs)
		store := &migStore{d: d}
		if err := completeMIG(d, shape.GPUs[i], store); err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		st := newMockState(m)
		if !root.IsHost() {
			dir := root.Path("/run/gpuprep-mock/")
			st.attach(filepath.Join(dir, d.UUID+".json"))
			if err := store.attach(filepath.Join(dir, d.UUID+".mig.json")); err != nil {
				return nil, fmt.Errorf("GPU %d: %w", i, err)
			}
		}
		st.install(d)
		installHealth(d, root)
		installLoad(d)
	}
	return srv, nil
}

// driverMIGMinors is the driver's mig-minors table for the shape's GPUs: for GPU minor m, GPU instance g (0..14), compute instance c (0..7),
// gi access = 3 + 135m + 9g and ci access = gi access + 1 + c.
func driverMIGMinors(shape nodeshape.Shape) gpu.MIGMinors {
	t := gpu.MIGMinors{"config": 1, "monitor": 2}
	for _, g := range shape.GPUs {
		for gi := 0; gi < 15; gi++ {
			base := 3 + 135*g.Minor + 9*gi
			t[fmt.Sprintf("gpu%d/gi%d/access", g.Minor, gi)] = base
			for ci := 0; ci < 8; ci++ {
				t[fmt.Sprintf("gpu%d/gi%d/ci%d/access", g.Minor, gi, ci)] = base + 1 + ci
			}
		}
	}
	return t
}
