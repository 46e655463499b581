package probefleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/probe"
)

// slowFleet is 40 nodes of 8 H100s with ±2% noise where gpu007's GPU 3
// has 20% less HBM bandwidth and every GPU of gpu023 half the H2D.
func slowFleet(seed uint64) []probe.Verdict {
	vs := h100Fleet(40, seed)
	vs[6].Result.GPUs[3].D2D.GBps *= 0.8
	for i := range vs[22].Result.GPUs {
		vs[22].Result.GPUs[i].H2D.GBps *= 0.5
	}
	return vs
}

// slowFlags is what slowFleet should flag, in the report's order.
func slowFlags() []string {
	want := []string{"gpu007/3/hbm_gbps"}
	for i := range 8 {
		want = append(want, fmt.Sprintf("gpu023/%d/h2d_gbps", i))
	}
	return want
}

// One GPU's slow HBM and one node's slow H2D stand out of 320 GPUs with
// ±2% noise, read from files; nothing else does.
func TestSlowGPUAndNodeFlagged(t *testing.T) {
	dir := t.TempDir()
	for _, v := range slowFleet(1) {
		writeJSON(t, filepath.Join(dir, v.Node, probe.VerdictFile), v)
	}
	nodes, errs := Read([]string{dir})
	if len(errs) != 0 || len(nodes) != 40 {
		t.Fatalf("Read: %d nodes, errors %v", len(nodes), errs)
	}
	r := Build(nodes, Options{})
	if got := flagKeys(r); !slices.Equal(got, slowFlags()) {
		t.Fatalf("flags %v, want %v", got, slowFlags())
	}
	hbm := r.Flags[0]
	if hbm.BelowPct < 17 || hbm.BelowPct > 23 || hbm.RobustZ == nil || *hbm.RobustZ > -3 || hbm.Model != h100 || hbm.BusID != "0000:48:00.0" {
		t.Errorf("HBM flag %+v (z %v)", hbm, hbm.RobustZ)
	}
	if math.Abs(hbm.Median-2900) > 2900*0.01 {
		t.Errorf("HBM median %.1f, want about 2900", hbm.Median)
	}
	wantNodes := []FlaggedNode{
		{Node: "gpu007", GPUs: []int{3}, Metrics: []string{MetricHBM}},
		{Node: "gpu023", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Metrics: []string{MetricH2D}},
	}
	if !reflect.DeepEqual(r.FlaggedNodes, wantNodes) {
		t.Errorf("flagged nodes %+v, want %+v", r.FlaggedNodes, wantNodes)
	}
	if r.Nodes != 40 || r.GPUs != 320 || len(r.Models) != 1 || r.Models[0].GPUs != 320 || r.Models[0].Nodes != 40 {
		t.Errorf("counts: %d nodes, %d GPUs, models %+v", r.Nodes, r.GPUs, r.Models)
	}
	for _, s := range r.Models[0].Metrics {
		if s.N != 320 || s.Note != "" || !(s.P10 < s.Median && s.Median < s.P90) || s.MAD <= 0 {
			t.Errorf("%s summary %+v", s.Metric, s)
		}
	}
}

// With other noise draws (fixed seeds) the same GPUs and only they are
// flagged: no false positive from ±2% noise.
func TestNoFalsePositives(t *testing.T) {
	for seed := uint64(2); seed <= 30; seed++ {
		if got := flagKeys(Build(asNodes(slowFleet(seed)), Options{})); !slices.Equal(got, slowFlags()) {
			t.Errorf("seed %d: flags %v", seed, got)
		}
		if got := flagKeys(Build(asNodes(h100Fleet(40, seed)), Options{})); len(got) != 0 {
			t.Errorf("seed %d, healthy fleet: flags %v", seed, got)
		}
	}
}

// A value below the margin but within K scaled MADs of a noisy fleet is
// not flagged: both must hold.
func TestWideSpreadNeedsZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 0))
	var vs []probe.Verdict
	for i := range 20 {
		vs = append(vs, verdict(fmt.Sprintf("n%02d", i), h100, 1, h100Nominal, rng, 0.20))
	}
	vs[5].Result.GPUs[0].D2D.GBps = 2900 * 0.85 // 15% low: past the margin, not the z
	r := Build(asNodes(vs), Options{})
	if len(r.Flags) != 0 {
		t.Errorf("flags %v in a ±20%% fleet", flagKeys(r))
	}
	if s := metricOf(t, r, h100, MetricHBM); 3*madScale*s.MAD < 0.15*s.Median {
		t.Fatalf("the fleet is not wide enough for the test: %+v", s)
	}
}

// Two models in one fleet are each held to their own median.
func TestModelsComparedSeparately(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	var vs []probe.Verdict
	for i := range 10 {
		vs = append(vs, verdict(fmt.Sprintf("h%02d", i), h100, 8, h100Nominal, rng, 0.02),
			verdict(fmt.Sprintf("a%02d", i), a100, 8, a100Nominal, rng, 0.02))
	}
	vs[3].Result.GPUs[6].Compute.TFLOPS *= 0.7 // a01, an A100
	r := Build(asNodes(vs), Options{})
	if got := flagKeys(r); !slices.Equal(got, []string{"a01/6/tflops"}) {
		t.Fatalf("flags %v, want only a01's GPU 6 tflops", got)
	}
	if r.Flags[0].Model != a100 || math.Abs(r.Flags[0].Median-18.5) > 0.5 {
		t.Errorf("flag %+v, want against the A100 median", r.Flags[0])
	}
	if len(r.Models) != 2 || r.Models[0].Model != a100 || r.Models[1].Model != h100 {
		t.Fatalf("models %+v", r.Models)
	}
	for _, m := range r.Models {
		if m.Nodes != 10 || m.GPUs != 80 {
			t.Errorf("%s: %d nodes, %d GPUs", m.Model, m.Nodes, m.GPUs)
		}
	}
	if h, a := metricOf(t, r, h100, MetricHBM), metricOf(t, r, a100, MetricHBM); math.Abs(h.Median-2900) > 30 || math.Abs(a.Median-1700) > 20 {
		t.Errorf("HBM medians: H100 %.1f, A100 %.1f", h.Median, a.Median)
	}
}

// A forced verdict is listed, counted as GPUs, but its values are neither
// in the medians nor judged, though they would drag the median down.
func TestForcedExcluded(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	var vs []probe.Verdict
	for i := range 10 {
		nom := h100Nominal
		if i >= 4 {
			nom = nominal{h2d: 20, d2h: 20, hbm: 1400, tflops: 20, p2p: 100} // busy GPUs
		}
		v := verdict(fmt.Sprintf("n%02d", i), h100, 8, nom, rng, 0.02)
		v.Forced = i >= 4
		vs = append(vs, v)
	}
	vs[9].Pass = false
	vs[9].Findings = []probe.Finding{{Code: probe.CodeHBMSlow, GPU: 1}, {Code: probe.CodeComputeSlow, GPU: 0}, {Code: probe.CodeHBMSlow, GPU: 2}}
	r := Build(asNodes(vs), Options{})
	if len(r.Flags) != 0 {
		t.Errorf("flags %v", flagKeys(r))
	}
	s := metricOf(t, r, h100, MetricHBM)
	if s.N != 32 || math.Abs(s.Median-2900) > 60 {
		t.Errorf("HBM summary %+v, want 32 values about 2900", s)
	}
	if r.GPUs != 80 || r.Models[0].GPUs != 80 || r.Models[0].Nodes != 10 {
		t.Errorf("counts %d GPUs, model %+v", r.GPUs, r.Models[0])
	}
	var forced []string
	for _, f := range r.Forced {
		forced = append(forced, f.Node)
	}
	if !slices.Equal(forced, []string{"n04", "n05", "n06", "n07", "n08", "n09"}) {
		t.Errorf("forced %v", forced)
	}
	want := []NodeVerdict{{Node: "n09", Time: t0, Pass: false, Forced: true, Codes: []string{probe.CodeComputeSlow, probe.CodeHBMSlow}}}
	if !reflect.DeepEqual(r.Failed, want) {
		t.Errorf("failed %+v, want %+v", r.Failed, want)
	}
}

// When every other value is the same the MAD is 0: the margin alone
// decides, and the flag has no z.
func TestMADZero(t *testing.T) {
	var vs []probe.Verdict
	for i, hbm := range []float64{3000, 3000, 3000, 2730, 2670} { // 9% and 11% low
		v := verdict(fmt.Sprintf("n%d", i), h100, 1, h100Nominal, nil, 0)
		v.Result.GPUs[0].D2D.GBps = hbm
		vs = append(vs, v)
	}
	r := Build(asNodes(vs), Options{})
	if got := flagKeys(r); !slices.Equal(got, []string{"n4/0/hbm_gbps"}) {
		t.Fatalf("flags %v, want n4's HBM alone", got)
	}
	if s := metricOf(t, r, h100, MetricHBM); s.MAD != 0 || s.Median != 3000 {
		t.Errorf("HBM summary %+v", s)
	}
	if f := r.Flags[0]; f.RobustZ != nil || math.Abs(f.BelowPct-11) > 1e-9 {
		t.Errorf("flag %+v (z %v)", f, f.RobustZ)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "11.0%  -") {
		t.Errorf("no z should show as -:\n%s", buf.String())
	}
}

// A model with fewer than MinGPUs GPUs is summarised but not judged.
func TestTooFewGPUs(t *testing.T) {
	vs := h100Fleet(5, 5)
	v := verdict("t4node", t4, 2, nominal{h2d: 12, d2h: 12, hbm: 300, tflops: 8, p2p: 10}, nil, 0)
	v.Result.GPUs[1].D2D.GBps = 100
	vs = append(vs, v)
	r := Build(asNodes(vs), Options{})
	if len(r.Flags) != 0 {
		t.Errorf("flags %v", flagKeys(r))
	}
	for _, s := range r.Models[1].Metrics {
		if r.Models[1].Model != t4 || s.Note != TooFew || s.N != 2 || s.Flagged != 0 {
			t.Errorf("%s %+v", r.Models[1].Model, s)
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "hbm_gbps  2  too few to compare") {
		t.Errorf("text:\n%s", buf.String())
	}
}

// A GPU's p2p value is the median of the copies into it with peer access:
// slow copies into one GPU flag it (not the GPUs it copies to); one slow
// copy of seven does not; copies without peer access, or failed, do not
// count.
func TestP2PRule(t *testing.T) {
	vs := h100Fleet(6, 6)
	for i, p := range vs[0].Result.Pairs {
		if p.To == 5 {
			vs[0].Result.Pairs[i].GBps *= 0.5
		}
		if p.To == 2 && p.From == 0 {
			vs[0].Result.Pairs[i].GBps *= 0.1
		}
	}
	for i, p := range vs[1].Result.Pairs {
		if p.To == 4 { // through the host, no peer access
			vs[1].Result.Pairs[i].PeerAccess, vs[1].Result.Pairs[i].GBps = false, 20
		}
	}
	for i := range vs[2].Result.Pairs {
		vs[2].Result.Pairs[i].Error, vs[2].Result.Pairs[i].GBps = "CUDA_ERROR_LAUNCH_FAILED", 0
	}
	r := Build(asNodes(vs), Options{})
	if got := flagKeys(r); !slices.Equal(got, []string{"gpu001/5/p2p_gbps"}) {
		t.Fatalf("flags %v, want gpu001's GPU 5 p2p alone", got)
	}
	if f := r.Flags[0]; f.BelowPct < 45 || f.BelowPct > 55 {
		t.Errorf("flag %+v", f)
	}
	if s := metricOf(t, r, h100, MetricP2P); s.N != 48-1-8 {
		t.Errorf("p2p values %d, want 39 (GPU 4 of gpu002 and gpu003 have none)", s.N)
	}
	if got := p2pInto(2, vs[0].Result.Pairs); math.Abs(got-370) > 370*0.03 {
		t.Errorf("p2p into GPU 2 = %.1f, want about 370 (median of 7)", got)
	}
}

// Values that are missing, zero, failed or of an unprobed GPU are left
// out; Options below zero take the defaults.
func TestMissingValuesAndDefaults(t *testing.T) {
	vs := h100Fleet(4, 8)
	vs[0].Result.GPUs[0].H2D = probe.Measurement{Error: "CUDA_ERROR_OUT_OF_MEMORY"}
	vs[0].Result.GPUs[1].Compute = probe.Compute{Error: "unknown: no kernel", TFLOPS: 1}
	vs[1].Result.GPUs[2].D2H.GBps = 0
	vs[2].Result.GPUs[3] = probe.GPUResult{Target: vs[2].Result.GPUs[3].Target, Error: "no CUDA device"}
	vs[2].Result.GPUs[3].D2D.GBps = 5
	r := Build(asNodes(vs), Options{Margin: -1, K: math.NaN()})
	if r.Margin != DefaultMargin || r.K != DefaultK || len(r.Flags) != 0 {
		t.Errorf("margin %g, k %g, flags %v", r.Margin, r.K, flagKeys(r))
	}
	want := map[string]int{MetricH2D: 30, MetricD2H: 30, MetricHBM: 31, MetricTFLOPS: 30, MetricP2P: 31}
	for metric, n := range want {
		if s := metricOf(t, r, h100, metric); s.N != n {
			t.Errorf("%s: %d values, want %d", metric, s.N, n)
		}
	}
}

// The report is the same whatever order the nodes come in, and its JSON
// has snake_case keys and empty lists as [].
func TestJSONStable(t *testing.T) {
	nodes := asNodes(slowFleet(9))
	a, err := json.Marshal(Build(nodes, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	b, _ := json.Marshal(Build(nodes, Options{}))
	if !bytes.Equal(a, b) {
		t.Error("the JSON depends on the nodes' order")
	}
	for _, key := range []string{`"flagged_nodes":`, `"below_pct":`, `"robust_z":`, `"bus_id":"0000:48:00.0"`, `"p10":`, `"margin":0.1`} {
		if !bytes.Contains(a, []byte(key)) {
			t.Errorf("no %s in %s", key, a)
		}
	}
	empty, _ := json.Marshal(Build(nil, Options{}))
	want := `{"margin":0.1,"k":3,"nodes":0,"gpus":0,"flags":[],"flagged_nodes":[],"failed":[],"forced":[],"models":[]}`
	if string(empty) != want {
		t.Errorf("empty report %s, want %s", empty, want)
	}
}

// The text lists the flagged GPUs worst first, then the nodes, the
// failed verdicts and the fleet.
func TestWriteText(t *testing.T) {
	vs := slowFleet(1)
	vs[10].Pass = false
	vs[10].Findings = []probe.Finding{{Code: probe.CodePCIeSlow}}
	var buf bytes.Buffer
	if err := WriteText(&buf, Build(asNodes(vs), Options{})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "NODE") && strings.Contains(l, "ROBUST Z") })
	if i < 0 || !strings.HasPrefix(lines[i+1], "gpu023") || !strings.HasPrefix(lines[i+9], "gpu007  3") {
		t.Errorf("not worst first:\n%s", out)
	}
	for _, want := range []string{"Flagged GPUs: 9 flags on 2 nodes", "gpu023  GPUs 0,1,2,3,4,5,6,7  h2d_gbps",
		"gpu007  GPU 3", "Verdicts failed on their node: 1", "gpu011  2026-03-01T10:00:00Z  fail     PCIE_SLOW",
		h100 + ": 320 GPUs on 40 nodes", "  hbm_gbps  320"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the text", want)
		}
	}
}
