package textfile

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"gpuprep/lib/health"
	"gpuprep/lib/metrics"
	"gpuprep/lib/probe"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600))

// testVerdict is a failed verdict of three GPUs: GPU 0 passes; GPU 1's
// memory is slow (found twice, as from two probes) and its compute could
// not run; GPU 2 could not be probed. GPU 0 and 1 copy to each other with
// peer access, GPU 2 has none; the copy from 0 to 2 failed.
func testVerdict() *probe.Verdict {
	g := func(i int, bus string) probe.GPUResult {
		return probe.GPUResult{Target: probe.Target{Index: i, BusID: bus, Name: "NVIDIA H100 80GB HBM3"}}
	}
	g0, g1, g2 := g(0, "0000:18:00.0"), g(1, "0000:2a:00.0"), g(2, "0000:db:00.0")
	g0.H2D.GBps, g0.D2H.GBps, g0.D2D.GBps = 53.2, 52.8, 2890
	g0.Compute = probe.Compute{TFLOPS: 58.5, Ratio: 0.91, During: probe.Sample{SMClockMHz: 1980}}
	g1.H2D.GBps, g1.D2H.Error, g1.D2D.GBps = 53, "copy failed", 1500
	g1.Compute = probe.Compute{TFLOPS: 1, Error: "kernel failed"}
	g2.Error, g2.H2D.GBps = "no CUDA device", 9 // a value of a GPU not probed is not reported
	pair := func(from, to int, peer bool, gbps float64, err string) probe.Pair {
		p := probe.Pair{From: from, To: to, PeerAccess: peer}
		p.GBps, p.Error = gbps, err
		return p
	}
	f := probe.Floors{H2DGBps: 47.3, D2HGBps: 47.3, HBMGBps: 2680, P2PGBps: 360, TFLOPS: 53.5, ComputeRatio: 0.8}
	return &probe.Verdict{
		Time: t0, Forced: true,
		Findings: []probe.Finding{
			{Code: probe.CodeHBMSlow, GPU: 1, BusID: g1.BusID},
			{Code: probe.CodeProbeFailed, GPU: 1, BusID: g1.BusID},
			{Code: probe.CodeHBMSlow, GPU: 1, BusID: g1.BusID},
			{Code: probe.CodeProbeFailed, GPU: 2, BusID: g2.BusID},
		},
		Floors: []probe.Floors{f, f, {H2DGBps: 47.3}},
		Result: &probe.Result{
			GPUs: []probe.GPUResult{g0, g1, g2},
			Pairs: []probe.Pair{pair(0, 1, true, 380, ""), pair(1, 0, true, 375, ""), pair(0, 2, true, 0, "out of memory"),
				pair(2, 0, false, 0, ""), pair(1, 3, true, 300, "")}, // GPU 3 is no GPU of the verdict's
		},
	}
}

// inventory lists GPU 0 and 1 (as NVML numbers them: 4 and 5), not 2.
var inventory = []health.GPURef{{Index: 4, UUID: "GPU-a", BusID: "0000:18:00.0"}, {Index: 5, UUID: "GPU-b", BusID: "0000:2a:00.0"}}

// TestAddProbe: the verdict's summary, each GPU labelled from the
// inventory; values with errors, pairs without peer access and repeated
// findings left out.
func TestAddProbe(t *testing.T) {
	var m metrics.Metrics
	AddProbe(&m, probe.StatusFail, testVerdict(), inventory)
	a := metrics.GPULabels{GPU: "4", UUID: "GPU-a", BusID: "00000000:18:00.0"}
	b := metrics.GPULabels{GPU: "5", UUID: "GPU-b", BusID: "00000000:2A:00.0"}
	c := metrics.GPULabels{BusID: "00000000:DB:00.0"}
	f := metrics.ProbeFloors{H2D: 47.3, D2H: 47.3, HBM: 2680, P2P: 360, TFLOPS: 53.5}
	want := &metrics.ProbeState{
		Status: "fail", Time: t0.UTC(), Forced: true,
		GPUs: []metrics.ProbeGPU{
			{GPULabels: a, H2DGBps: 53.2, D2HGBps: 52.8, HBMGBps: 2890, TFLOPS: 58.5, Ratio: 0.91, SMClockMHz: 1980, Floors: f},
			{GPULabels: b, H2DGBps: 53, HBMGBps: 1500, Floors: f},
			{GPULabels: c, Floors: metrics.ProbeFloors{H2D: 47.3}},
		},
		Pairs: []metrics.ProbePair{{GPULabels: b, Peer: "4", GBps: 380}, {GPULabels: a, Peer: "5", GBps: 375}},
		Findings: []metrics.ProbeFinding{
			{Code: probe.CodeHBMSlow, GPULabels: b},
			{Code: probe.CodeProbeFailed, GPULabels: b},
			{Code: probe.CodeProbeFailed, GPULabels: c},
		},
	}
	if !reflect.DeepEqual(m.Probe, want) {
		t.Fatalf("got  %+v\nwant %+v", m.Probe, want)
	}

	// A later run: the verdict is too old (unknown), still reported with
	// its values; then the probe check is turned off (no status): gone.
	AddProbe(&m, probe.StatusUnknown, testVerdict(), inventory)
	if m.Probe == nil || m.Probe.Status != "unknown" || len(m.Probe.GPUs) != 3 {
		t.Fatalf("unknown: %+v", m.Probe)
	}
	AddProbe(&m, "", nil, inventory)
	if m.Probe != nil {
		t.Fatalf("no status read: %+v", m.Probe)
	}
}

// TestAddProbeStatusOnly: no verdict, or "none", is the status alone.
func TestAddProbeStatusOnly(t *testing.T) {
	var m metrics.Metrics
	AddProbe(&m, probe.StatusNone, nil, inventory)
	if !reflect.DeepEqual(m.Probe, &metrics.ProbeState{Status: "none"}) {
		t.Fatalf("none: %+v", m.Probe)
	}
	AddProbe(&m, probe.StatusNone, testVerdict(), inventory) // a verdict that is not the status's
	if !reflect.DeepEqual(m.Probe, &metrics.ProbeState{Status: "none"}) {
		t.Fatalf("none with a verdict: %+v", m.Probe)
	}
	AddProbe(&m, probe.StatusPass, nil, inventory)
	if !reflect.DeepEqual(m.Probe, &metrics.ProbeState{Status: "pass"}) {
		t.Fatalf("pass, verdict not read: %+v", m.Probe)
	}
	// A verdict without a result (none saved) has its header only.
	v := testVerdict()
	v.Result = nil
	AddProbe(&m, probe.StatusFail, v, nil)
	if m.Probe.GPUs != nil || m.Probe.Pairs != nil || len(m.Probe.Findings) != 3 || m.Probe.Findings[0].GPU != "" {
		t.Fatalf("no result: %+v", m.Probe)
	}
}

// The metrics' status values are lib/probe's.
func TestProbeStatuses(t *testing.T) {
	want := []string{string(probe.StatusPass), string(probe.StatusFail), string(probe.StatusUnknown), string(probe.StatusNone)}
	if !slices.Equal(metrics.ProbeStatuses, want) {
		t.Errorf("metrics.ProbeStatuses %v, lib/probe's %v", metrics.ProbeStatuses, want)
	}
}
