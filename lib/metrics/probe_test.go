package metrics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testProbe is a failed verdict's summary: GPU 0 passes, GPU 1's memory
// is slow and its compute failed, GPU 10 (an index of two digits) was not
// probed; copies between 0 and 1, and into 0 from 10.
func testProbe() *ProbeState {
	g0 := GPULabels{GPU: "0", UUID: "GPU-0", BusID: "00000000:18:00.0"}
	g1 := GPULabels{GPU: "1", UUID: "GPU-1", BusID: "00000000:2A:00.0"}
	g10 := GPULabels{GPU: "10", UUID: "GPU-10", BusID: "00000000:DB:00.0"}
	floors := ProbeFloors{H2D: 47.3, D2H: 47.3, HBM: 2680, P2P: 360, TFLOPS: 53.5}
	return &ProbeState{
		Status: "fail", Time: t0,
		GPUs: []ProbeGPU{
			// Out of order: written by bus id.
			{GPULabels: g1, H2DGBps: 53.1, D2HGBps: 52.9, HBMGBps: 1500.5, Floors: floors},
			{GPULabels: g0, H2DGBps: 53.25, D2HGBps: 53, HBMGBps: 2890.125, TFLOPS: 58.5, Ratio: 0.91, SMClockMHz: 1980, Floors: floors},
			{GPULabels: g10, Floors: ProbeFloors{H2D: 47.3}},
		},
		Pairs: []ProbePair{
			{GPULabels: g1, Peer: "0", GBps: 375.5},
			{GPULabels: g0, Peer: "10", GBps: 370},
			{GPULabels: g0, Peer: "1", GBps: 380.25},
		},
		Findings: []ProbeFinding{
			{Code: "PROBE_FAILED", GPULabels: g10},
			{Code: "HBM_SLOW", GPULabels: g1},
			{Code: "PROBE_FAILED", GPULabels: g1},
			{Code: "HBM_SLOW", GPULabels: g1}, // one series per code and GPU
		},
	}
}

// TestProbeMetrics: the probe families parse, carry the GPU labels, leave out what was not measured, and come in a fixed order.
func TestProbeMetrics(t *testing.T) {
	m := Metrics{Probe: testProbe()}
	text := string(Format(HookHealth, testNode, m, Build{Version: "dev"}))
	got, err := parseProm(text)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, text)
	}
	const (
		l0  = `UUID="GPU-0",gpu="0",hook="health",pci_bus_id="00000000:18:00.0"`
		l1  = `UUID="GPU-1",gpu="1",hook="health",pci_bus_id="00000000:2A:00.0"`
		l10 = `UUID="GPU-10",gpu="10",hook="health",pci_bus_id="00000000:DB:00.0"`
	)
	want := map[string]float64{
		`gpuprep_probe_status{hook="health",status="pass"}`:      0,
		`gpuprep_probe_status{hook="health",status="fail"}`:      1,
		`gpuprep_probe_status{hook="health",status="unknown"}`:   0,
		`gpuprep_probe_status{hook="health",status="none"}`:      0,
		`gpuprep_probe_timestamp_seconds{hook="health"}`:         float64(t0.Unix()),
		`gpuprep_probe_forced{hook="health"}`:                    0,
		`gpuprep_probe_h2d_gbps{` + l0 + `}`:                     53.25,
		`gpuprep_probe_h2d_gbps{` + l1 + `}`:                     53.1,
		`gpuprep_probe_d2h_gbps{` + l0 + `}`:                     53,
		`gpuprep_probe_d2h_gbps{` + l1 + `}`:                     52.9,
		`gpuprep_probe_hbm_gbps{` + l0 + `}`:                     2890.125,
		`gpuprep_probe_hbm_gbps{` + l1 + `}`:                     1500.5,
		`gpuprep_probe_fp32_tflops{` + l0 + `}`:                  58.5,
		`gpuprep_probe_fp32_ratio_to_peak{` + l0 + `}`:           0.91,
		`gpuprep_probe_sm_clock_mhz{` + l0 + `}`:                 1980,
		`gpuprep_probe_p2p_gbps{` + l0 + `,peer_gpu="1"}`:        380.25,
		`gpuprep_probe_p2p_gbps{` + l0 + `,peer_gpu="10"}`:       370,
		`gpuprep_probe_p2p_gbps{` + l1 + `,peer_gpu="0"}`:        375.5,
		`gpuprep_probe_finding{` + l1 + `,code="HBM_SLOW"}`:      1,
		`gpuprep_probe_finding{` + l1 + `,code="PROBE_FAILED"}`:  1,
		`gpuprep_probe_finding{` + l10 + `,code="PROBE_FAILED"}`: 1,
		`gpuprep_probe_floor{` + l10 + `,probe="h2d"}`:           47.3,
	}
	for _, l := range []string{l0, l1} {
		for probe, v := range map[string]float64{"h2d": 47.3, "d2h": 47.3, "hbm": 2680, "p2p": 360, "tflops": 53.5} {
			want[`gpuprep_probe_floor{`+l+`,probe="`+probe+`"}`] = v
		}
	}
	for k, v := range want {
		k = sortedLabels(t, k)
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "gpuprep_probe_") {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("%d probe series, want %d:\n%s", n, len(want), text)
	}
	// Deterministic: by bus id, then code or peer index.
	for _, order := range [][]string{
		{`gpuprep_probe_hbm_gbps{hook="health",Hostname="gpu01",slurm_node="node-a17",gpu="0"`, `gpuprep_probe_hbm_gbps{hook="health",Hostname="gpu01",slurm_node="node-a17",gpu="1"`},
		{`peer_gpu="1",Hostname="gpu01",slurm_node="node-a17",gpu="0"`, `peer_gpu="10",Hostname="gpu01",slurm_node="node-a17",gpu="0"`, `peer_gpu="0",Hostname="gpu01",slurm_node="node-a17",gpu="1"`},
		{`code="HBM_SLOW",Hostname="gpu01",slurm_node="node-a17",gpu="1"`, `code="PROBE_FAILED",Hostname="gpu01",slurm_node="node-a17",gpu="1"`, `code="PROBE_FAILED",Hostname="gpu01",slurm_node="node-a17",gpu="10"`},
	} {
		at := -1
		for _, s := range order {
			i := strings.Index(text, s)
			if i <= at {
				t.Errorf("%q not after %q:\n%s", s, order, text)
			}
			at = i
		}
	}
	if again := string(Format(HookHealth, testNode, m, Build{Version: "dev"})); again != text {
		t.Error("two formats of the same metrics differ")
	}
}

// sortedLabels is a want key with its labels sorted, as parseProm keys.
func sortedLabels(t *testing.T, k string) string {
	t.Helper()
	name, rest, _ := strings.Cut(strings.TrimSuffix(k, "}"), "{")
	labels := strings.Split(rest, ",")
	got, err := parseProm(name + "{" + strings.Join(labels, ",") + "} 1\n")
	if err != nil || len(got) != 1 {
		t.Fatalf("%s: %v", k, err)
	}
	for s := range got {
		return s
	}
	return ""
}

// TestProbeMetricsStatusOnly: never probed is the status alone; no
// verdict read has HELP and TYPE only; other writers' files have none of
// the families.
func TestProbeMetricsStatusOnly(t *testing.T) {
	text := string(Format(HookHealth, testNode, Metrics{Probe: &ProbeState{Status: "none"}}, Build{}))
	got, err := parseProm(text)
	if err != nil {
		t.Fatal(err)
	}
	var probes []string
	for k := range got {
		if strings.HasPrefix(k, "gpuprep_probe_") {
			probes = append(probes, k)
		}
	}
	if len(probes) != 4 || got[`gpuprep_probe_status{hook="health",status="none"}`] != 1 {
		t.Errorf("never probed: %v\n%s", probes, text)
	}
	text = string(Format(HookHealth, testNode, Metrics{}, Build{}))
	if strings.Contains(text, "\ngpuprep_probe_") {
		t.Errorf("no verdict read, yet probe samples:\n%s", text)
	}
	for _, name := range []string{MetricProbeStatus, MetricProbeTime, MetricProbeForced, MetricProbeH2D, MetricProbeD2H, MetricProbeHBM,
		MetricProbeTFLOPS, MetricProbeRatio, MetricProbeSMClock, MetricProbeFloor, MetricProbeP2P, MetricProbeFinding} {
		if !strings.Contains(text, "# HELP "+name+" ") || !strings.Contains(text, "# TYPE "+name+" gauge\n") {
			t.Errorf("no HELP/TYPE for %s", name)
		}
	}
	for _, hook := range []string{HookProlog, HookEpilog} {
		if text := string(Format(hook, testNode, Metrics{Probe: testProbe()}, Build{})); strings.Contains(text, "gpuprep_probe_") {
			t.Errorf("%s's file has probe families", hook)
		}
	}
	forced := testProbe()
	forced.Forced = true
	got, _ = parseProm(string(Format(HookHealth, testNode, Metrics{Probe: forced}, Build{})))
	if got[`gpuprep_probe_forced{hook="health"}`] != 1 {
		t.Error("forced verdict: gpuprep_probe_forced is not 1")
	}
}

// TestProbeStateCompatible: a metrics state saved before the probes loads
// (Probe nil), and one with them survives a save and load whole.
func TestProbeStateCompatible(t *testing.T) {
	sp := newSpool(t)
	old := `{"drift_events":null,"invariant_events":null,"runs":{"health":{"end":"2026-03-01T10:00:00Z","duration_seconds":0.5,"ok":true}},"node_drained":0,"state_saved":1}`
	if err := os.WriteFile(filepath.Join(sp.Dir(), StateFile(HookHealth)), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _, err := Load(sp, HookHealth)
	if err != nil || m.Probe != nil || !m.Runs[HookHealth].OK {
		t.Fatalf("old state: %+v %v", m, err)
	}
	m.Probe = testProbe()
	if err := Save(sp, HookHealth, m); err != nil {
		t.Fatal(err)
	}
	m2, _, err := Load(sp, HookHealth)
	if err != nil || !reflect.DeepEqual(m2, m) {
		t.Fatalf("reload:\n got %+v\nwant %+v (%v)", m2.Probe, m.Probe, err)
	}
}
