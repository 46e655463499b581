package probe

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/cuda"
	"gpuprep/lib/cuda/cudafake"
)

// fakeNode is two H100-like GPUs with NVLink between them and a third on
// PCIe alone, whose driver has no PTX compiler.
func fakeNode() *cudafake.Driver {
	h100 := func(bus string, peers map[string]float64) *cudafake.GPU {
		return &cudafake.GPU{BusID: bus, SMs: 132, CCMajor: 9, CCMinor: 0, ClockKHz: 1980000,
			H2DGBps: 55, D2HGBps: 52, CopyGBps: 1500, FLOPS: 50e12, Peers: peers, HostPathGBps: 20}
	}
	d := &cudafake.Driver{GPUs: []*cudafake.GPU{
		h100("0000:18:00.0", map[string]float64{"0000:2a:00.0": 370}),
		h100("0000:2a:00.0", map[string]float64{"0000:18:00.0": 360}),
		h100("0000:3b:00.0", nil),
	}}
	d.GPUs[2].NoJIT = true
	d.KernelFLOPs = func(fn string, grid, block uint32, args []cuda.Arg) float64 {
		return KernelFLOPs(grid, block, args[1].(uint32))
	}
	return d
}

func fakeTargets() []Target {
	return []Target{
		{Index: 0, BusID: "0000:18:00.0", NUMANode: 0},
		{Index: 1, BusID: "0000:2a:00.0", NUMANode: 0},
		{Index: 2, BusID: "0000:3b:00.0", NUMANode: 1},
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= want*1e-3 }

func TestRunMeasuresWhatTheGPUsDo(t *testing.T) {
	d := fakeNode()
	var bound []int
	o := Options{Driver: d, Targets: fakeTargets(), Span: 5 * time.Millisecond,
		Sample: func(i int) (Sample, error) { return Sample{SMClockMHz: 1755, PCIeGen: 5, PCIeWidth: 16}, nil },
		BindMemory: func(node int) (func(), error) {
			bound = append(bound, node)
			return func() {}, nil
		},
	}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if leaks := d.Leaks(); leaks != "" {
		t.Errorf("left behind: %s", leaks)
	}
	if len(bound) != 3 || bound[2] != 1 {
		t.Errorf("pinned buffers bound to NUMA nodes %v, want each GPU's (0 0 1)", bound)
	}
	g := r.GPUs[0]
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"h2d", g.H2D.GBps, 55}, {"d2h", g.D2H.GBps, 52}, {"d2d (read and written)", g.D2D.GBps, 3000},
		{"tflops", g.Compute.TFLOPS, 50}, {"peak at 1755 MHz", g.Compute.PeakAtClock, 132 * 128 * 2 * 1755e6 / 1e12},
		{"peak at 1980 MHz", g.Compute.PeakMaxClock, 132 * 128 * 2 * 1980e6 / 1e12}} {
		if !near(c.got, c.want) {
			t.Errorf("GPU 0 %s = %.2f, want %.2f", c.name, c.got, c.want)
		}
	}
	if g.H2D.During.PCIeGen != 5 || g.Compute.During.SMClockMHz != 1755 {
		t.Errorf("samples during the probes: %+v %+v", g.H2D.During, g.Compute.During)
	}
	if c := r.GPUs[2].Compute; !strings.HasPrefix(c.Error, "unknown: ") || !strings.Contains(c.Error, "libnvidia-ptxjitcompiler") || c.TFLOPS != 0 {
		t.Errorf("a driver without its PTX compiler: compute %+v, want unknown, saying why", c)
	}
}

func TestPeerCopiesUsePeerAccess(t *testing.T) {
	d := fakeNode()
	r, err := Run(context.Background(), Options{Driver: d, Targets: fakeTargets(), Span: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pairs) != 6 {
		t.Fatalf("pairs %+v, want 3 pairs both ways", r.Pairs)
	}
	for _, p := range r.Pairs {
		switch {
		case p.From == 0 && p.To == 1:
			if !p.PeerAccess || !near(p.GBps, 370) {
				t.Errorf("0 to 1: %+v, want peer access at 370 GB/s (20 is the path through the host)", p)
			}
		case p.From == 1 && p.To == 0:
			if !near(p.GBps, 360) {
				t.Errorf("1 to 0: %+v, want 360 GB/s", p)
			}
		default:
			if p.PeerAccess || p.GBps != 0 || p.Why == "" || p.Error != "" {
				t.Errorf("%d to %d: %+v, want no peer access, said, not measured", p.From, p.To, p)
			}
		}
	}
}

func TestRunWithAGPUTheDriverDoesNotKnow(t *testing.T) {
	d := fakeNode()
	ts := append(fakeTargets(), Target{Index: 3, BusID: "0000:99:00.0", NUMANode: -1})
	r, err := Run(context.Background(), Options{Driver: d, Targets: ts, Span: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if e := r.GPUs[3].Error; !strings.Contains(e, "0000:99:00.0") {
		t.Errorf("GPU 3's error %q, want one naming its bus id", e)
	}
	if r.GPUs[0].H2D.GBps == 0 {
		t.Error("the other GPUs were not probed")
	}
	if leaks := d.Leaks(); leaks != "" {
		t.Errorf("left behind: %s", leaks)
	}
}

func TestRoundsMeetEveryPairOnceDisjoint(t *testing.T) {
	for n := 0; n <= 9; n++ {
		met := map[[2]int]int{}
		for _, round := range rounds(n) {
			busy := map[int]bool{}
			for _, p := range round {
				if busy[p[0]] || busy[p[1]] || p[0] >= p[1] || p[1] >= n {
					t.Fatalf("n=%d: round %v reuses a GPU or has a bad pair", n, round)
				}
				busy[p[0]], busy[p[1]] = true, true
				met[p]++
			}
		}
		if want := n * (n - 1) / 2; len(met) != want {
			t.Errorf("n=%d: %d pairs met, want %d", n, len(met), want)
		}
		for p, k := range met {
			if k != 1 {
				t.Errorf("n=%d: pair %v met %d times", n, p, k)
			}
		}
	}
}

func TestKernelPTXHasTheFMAs(t *testing.T) {
	if got := strings.Count(kernelPTX, "fma.rn.f32"); got != FMAsPerIteration {
		t.Errorf("the kernel has %d FMAs per iteration, KernelFLOPs counts %d", got, FMAsPerIteration)
	}
	if !strings.Contains(kernelPTX, ".entry "+kernelName+"(") {
		t.Errorf("the kernel's entry is not %s", kernelName)
	}
}
