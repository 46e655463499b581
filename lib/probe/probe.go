// Package probe measures a node's GPUs: host-to-device and device-to-host
// bandwidth from pinned memory on each GPU's NUMA node, device memory
// bandwidth, FP32 compute against the GPU's peak at the clock it ran at,
// and peer-to-peer bandwidth between every pair, through the CUDA driver
// (lib/cuda). Run takes the measurements (probe.go, copy.go, compute.go,
// p2p.go); verdict.go judges them against floors (floors.go) and keeps the
// verdict in the spool, where gpuprep-health and the prolog read it.
//
// The probes are run so that they do not measure each other: host
// transfers one GPU at a time (GPUs behind one PCIe switch share its
// uplink), peer copies in rounds of disjoint pairs, the rest on every GPU
// at once.
package probe

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"gpuprep/lib/cuda"
)

// Target is one GPU to probe, as gpuprep's inventory and sysfs know it.
type Target struct {
	Index int    `json:"index"`
	BusID string `json:"bus_id"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	// NUMANode is the GPU's NUMA node (sysfs numa_node), -1 when none.
	NUMANode int `json:"numa_node"`
	// LinkGen and LinkWidth are what the GPU's PCIe link is built for
	// (sysfs max_link_speed, max_link_width); 0 when not known.
	LinkGen   int `json:"pcie_max_gen,omitempty"`
	LinkWidth int `json:"pcie_max_width,omitempty"`
	// NVLinks is the GPU's active NVLinks (0: none, or not known).
	NVLinks int `json:"nvlinks,omitempty"`
}

// Sample is what NVML says of a GPU while a probe loads it.
type Sample struct {
	SMClockMHz  uint32  `json:"sm_clock_mhz,omitempty"`
	MemClockMHz uint32  `json:"mem_clock_mhz,omitempty"`
	PowerW      float64 `json:"power_w,omitempty"`
	PCIeGen     int     `json:"pcie_gen,omitempty"`
	PCIeWidth   int     `json:"pcie_width,omitempty"`
}

// Options are what a probe run needs; zero sizes take the defaults.
type Options struct {
	Driver  cuda.Driver
	Targets []Target
	// Sample reads a GPU (by Target.Index) while it is loaded; nil: no
	// samples (the compute probe then has no clock to judge by).
	Sample func(index int) (Sample, error)
	// BindMemory makes the calling thread's allocations come from a NUMA
	// node until restore is called (set_mempolicy); nil: no binding.
	BindMemory func(node int) (restore func(), err error)
	// MemoryNode says which NUMA node holds the page at an address
	// (get_mempolicy MPOL_F_NODE|MPOL_F_ADDR); nil: not checked.
	MemoryNode func(addr uintptr) (int, error)
	// HostBytes is the pinned buffer's size (default 256 MiB),
	// DeviceBytes each device buffer's (default 512 MiB).
	HostBytes, DeviceBytes int64
	// Each measurement repeats its copy or kernel until it has run about
	// Span (default 200 ms).
	Span time.Duration
	Log  *slog.Logger
}

func (o *Options) defaults() {
	if o.HostBytes == 0 {
		o.HostBytes = 256 << 20
	}
	if o.DeviceBytes == 0 {
		o.DeviceBytes = 512 << 20
	}
	if o.Span == 0 {
		o.Span = 200 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Measurement is one bandwidth: its value, what was moved and how long it
// took, and the GPU's state during it; Error says why there is no value.
type Measurement struct {
	GBps    float64 `json:"gbps,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	During  Sample  `json:"during"`
	// HostNUMANode is the NUMA node the pinned buffer's pages are on
	// (host copies, when known; -1 otherwise).
	HostNUMANode *int   `json:"host_numa_node,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Compute is the compute probe's result.
type Compute struct {
	TFLOPS  float64 `json:"tflops,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	During  Sample  `json:"during"`
	// PeakAtClock is the FP32 peak at the SM clock it ran at (SMs x FP32
	// lanes x 2 x clock), Ratio TFLOPS over it; PeakMaxClock the peak at
	// the GPU's highest SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE).
	PeakAtClock  float64 `json:"peak_tflops_at_clock,omitempty"`
	Ratio        float64 `json:"ratio_to_peak,omitempty"`
	PeakMaxClock float64 `json:"peak_tflops_max_clock,omitempty"`
	SMs          int     `json:"sms,omitempty"`
	CCMajor      int     `json:"cc_major,omitempty"` // compute capability
	CCMinor      int     `json:"cc_minor,omitempty"`
	Lanes        int     `json:"fp32_lanes_per_sm,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// GPUResult is one GPU's measurements. D2D counts each byte copied twice
// (read and written), as memory bandwidth is quoted.
type GPUResult struct {
	Target
	H2D     Measurement `json:"h2d"`
	D2H     Measurement `json:"d2h"`
	D2D     Measurement `json:"d2d"`
	Compute Compute     `json:"compute"`
	Error   string      `json:"error,omitempty"` // the GPU could not be probed at all
	Seconds float64     `json:"seconds"`         // its probes' time
}

// Pair is the copy from one GPU's memory to another's.
type Pair struct {
	From       int    `json:"from"` // Target.Index
	To         int    `json:"to"`
	PeerAccess bool   `json:"peer_access"`
	Why        string `json:"why,omitempty"` // why peer access is not possible
	Measurement
}

// Result is a whole probe run.
type Result struct {
	Started     time.Time   `json:"started"`
	Seconds     float64     `json:"seconds"`
	CUDAVersion int         `json:"cuda_driver_version"`
	GPUs        []GPUResult `json:"gpus"`
	Pairs       []Pair      `json:"pairs,omitempty"`
}

// gpuRun is one GPU's context and what is measured of it.
type gpuRun struct {
	res *GPUResult
	dev cuda.Device
	ctx cuda.Context
}

// Run probes every target and returns what it measured. A GPU that cannot
// be probed has its Error set; Run fails only when the driver cannot be
// asked at all or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	start := time.Now()
	ver, err := o.Driver.Version()
	if err != nil {
		return nil, fmt.Errorf("CUDA driver version: %w", err)
	}
	r := &Result{Started: start, CUDAVersion: ver, GPUs: make([]GPUResult, len(o.Targets))}
	runs := make([]*gpuRun, len(o.Targets))
	for i, t := range o.Targets {
		r.GPUs[i].Target = t
		runs[i] = &gpuRun{res: &r.GPUs[i]}
	}
	defer releaseAll(runs, o.Log)
	phases := []func(){
		func() { eachGPU(runs, false, func(g *gpuRun) { openGPU(o, g) }) },
		func() { eachGPU(runs, false, func(g *gpuRun) { hostCopies(o, g) }) },
		func() { eachGPU(runs, true, func(g *gpuRun) { deviceCopy(o, g); compute(o, g) }) },
		func() { r.Pairs = peerCopies(ctx, o, runs) },
	}
	for _, phase := range phases {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe stopped: %w", err)
		}
		phase()
	}
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}

// eachGPU runs f for every GPU that could be opened (or, before that, every
// GPU), each on a goroutine locked to its OS thread (CUDA's current context
// and the memory policy are the thread's): all at once when parallel, else
// one after another. Each GPU's time is added to its Seconds.
func eachGPU(runs []*gpuRun, parallel bool, f func(*gpuRun)) {
	var wg sync.WaitGroup
	for _, g := range runs {
		if g.res.Error != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t := time.Now()
			f(g)
			g.res.Seconds += time.Since(t).Seconds()
		}()
		if !parallel {
			wg.Wait()
		}
	}
	wg.Wait()
}

// openGPU finds the GPU by its PCI bus id and retains its primary context.
func openGPU(o Options, g *gpuRun) {
	dev, err := o.Driver.DeviceByBusID(g.res.BusID)
	if err != nil {
		g.res.Error = fmt.Sprintf("no CUDA device at %s: %v", g.res.BusID, err)
		return
	}
	ctx, err := o.Driver.PrimaryContext(dev)
	if err != nil {
		g.res.Error = fmt.Sprintf("GPU %d's context: %v", g.res.Index, err)
		return
	}
	g.dev, g.ctx = dev, ctx
}

// releaseAll releases every context that was opened.
func releaseAll(runs []*gpuRun, log *slog.Logger) {
	for _, g := range runs {
		if g.ctx == nil {
			continue
		}
		if err := g.ctx.Release(); err != nil {
			log.Warn("CUDA context not released", "gpu", g.res.Index, "err", err)
		}
	}
}
