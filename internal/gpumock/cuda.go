package gpumock

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/cuda"
	"gpuprep/lib/cuda/cudafake"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/probe"
)

// CUDARates change what a mock GPU's fake CUDA driver measures (zero: the
// model's healthy value); a test writes them, by bus id, to CUDAFile.
type CUDARates struct {
	H2DGBps  float64 `json:"h2d_gbps,omitempty"`
	D2HGBps  float64 `json:"d2h_gbps,omitempty"`
	CopyGBps float64 `json:"copy_gbps,omitempty"` // device-to-device, each byte once
	FLOPS    float64 `json:"flops,omitempty"`
	P2PGBps  float64 `json:"p2p_gbps,omitempty"` // into this GPU
	NoJIT    bool    `json:"no_jit,omitempty"`
	// StallMS is real time each kernel launch takes (a probe that lasts).
	StallMS int `json:"stall_ms,omitempty"`
}

// CUDAFile is where a mock on a fixture root reads its GPUs' CUDA rates.
func CUDAFile(root host.Root) string { return root.Path("/run/gpuprep-mock/cuda.json") }

// WriteCUDARates makes the fake CUDA driver of a mock on root measure
// rates, by bus id (nil: every GPU healthy).
func WriteCUDARates(root host.Root, rates map[string]CUDARates) error {
	b, err := json.Marshal(rates)
	if err != nil {
		return err
	}
	p := CUDAFile(root)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// mockRates are a healthy GPU of each mock model: SMs, compute capability
// and highest SM clock as NVIDIA gives them; bandwidths and FLOP rates
// near what such a GPU measures.
type mockRates struct {
	sms, major, minor, clockKHz int
	h2d, copy, flops, perLink   float64
}

func ratesOf(name string) mockRates {
	switch {
	case strings.Contains(name, "A100"):
		return mockRates{108, 8, 0, 1410000, 24, 900, 16e12, 25}
	case strings.Contains(name, "B200"):
		return mockRates{148, 10, 0, 1965000, 55, 3500, 65e12, 50}
	case strings.Contains(name, "H200"):
		return mockRates{132, 9, 0, 1980000, 55, 2100, 55e12, 25}
	}
	return mockRates{132, 9, 0, 1980000, 55, 1500, 55e12, 25}
}

// FakeCUDA is a fake CUDA driver over the mock's GPUs: healthy rates for
// their model, peer access between GPUs with NVLinks to each other, and
// what CUDAFile on root changes.
func FakeCUDA(root host.Root, devs []gpu.Device) cuda.Driver {
	var set map[string]CUDARates
	if !root.IsHost() {
		if b, err := os.ReadFile(CUDAFile(root)); err == nil {
			_ = json.Unmarshal(b, &set) // a test's file; garbage means none
		}
	}
	d := &cudafake.Driver{}
	for _, dev := range devs {
		d.GPUs = append(d.GPUs, fakeGPU(dev, devs, set))
	}
	d.KernelFLOPs = func(fn string, grid, block uint32, args []cuda.Arg) float64 {
		iters, _ := args[1].(uint32)
		return probe.KernelFLOPs(grid, block, iters)
	}
	return d
}

// fakeGPU is one mock GPU's fake, with its peers (NVLinks) and the rates
// set for it and for the GPUs it copies from.
func fakeGPU(dev gpu.Device, devs []gpu.Device, set map[string]CUDARates) *cudafake.GPU {
	r := ratesOf(dev.Name)
	s := set[dev.BusID]
	g := &cudafake.GPU{BusID: dev.BusID, SMs: r.sms, CCMajor: r.major, CCMinor: r.minor, ClockKHz: r.clockKHz,
		H2DGBps: or(s.H2DGBps, r.h2d), D2HGBps: or(s.D2HGBps, r.h2d*0.95), CopyGBps: or(s.CopyGBps, r.copy),
		FLOPS: or(s.FLOPS, r.flops), NoJIT: s.NoJIT, HostPathGBps: 20, Peers: map[string]float64{},
		Stall: time.Duration(s.StallMS) * time.Millisecond}
	for j, links := range dev.NVLinks {
		if j == dev.Index || links <= 0 || j >= len(devs) {
			continue
		}
		peer := devs[j].BusID
		g.Peers[peer] = or(set[peer].P2PGBps, 0.8*r.perLink*float64(links))
	}
	return g
}

func or(set, healthy float64) float64 {
	if set > 0 {
		return set
	}
	return healthy
}

// installLoad makes a mock GPU read as it does under a probe's load: its
// SM clock at nine tenths of the model's highest, memory clock and power
// near what such a GPU shows (nvmlDeviceGetClockInfo, GetPowerUsage).
func installLoad(d *server.Device) {
	sm := uint32(ratesOf(d.Config.Name).clockKHz / 1000 * 9 / 10)
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		switch t {
		case nvml.CLOCK_SM, nvml.CLOCK_GRAPHICS:
			return sm, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return 2619, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 450000, nvml.SUCCESS }
}
