package probefleet

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gpuprep/lib/probe"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const (
	h100 = "NVIDIA H100 80GB HBM3"
	a100 = "NVIDIA A100-SXM4-80GB"
	t4   = "Tesla T4"
)

// nominal is a model's typical values.
type nominal struct{ h2d, d2h, hbm, tflops, p2p float64 }

var (
	h100Nominal = nominal{h2d: 53, d2h: 50, hbm: 2900, tflops: 51, p2p: 370}
	a100Nominal = nominal{h2d: 24, d2h: 22, hbm: 1700, tflops: 18.5, p2p: 240}
)

// jitter is 1 plus a uniform draw in [-noise, +noise] (1 when rng is nil).
func jitter(rng *rand.Rand, noise float64) float64 {
	if rng == nil {
		return 1
	}
	return 1 + noise*(2*rng.Float64()-1)
}

// verdict is a passing verdict of node: n GPUs of model, each value nom
// times a jitter of noise, every pair of GPUs copying both ways with peer
// access.
func verdict(node, model string, n int, nom nominal, rng *rand.Rand, noise float64) probe.Verdict {
	r := &probe.Result{Started: t0, Seconds: 30, CUDAVersion: 12080}
	for i := range n {
		g := probe.GPUResult{Target: probe.Target{Index: i, BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10), Name: model, NUMANode: i / 4}}
		g.H2D.GBps = nom.h2d * jitter(rng, noise)
		g.D2H.GBps = nom.d2h * jitter(rng, noise)
		g.D2D.GBps = nom.hbm * jitter(rng, noise)
		g.Compute.TFLOPS = nom.tflops * jitter(rng, noise)
		r.GPUs = append(r.GPUs, g)
	}
	for from := range n {
		for to := range n {
			if from != to {
				p := probe.Pair{From: from, To: to, PeerAccess: true}
				p.GBps = nom.p2p * jitter(rng, noise)
				r.Pairs = append(r.Pairs, p)
			}
		}
	}
	return probe.Verdict{Time: t0, Node: node, BootID: "boot-" + node, Driver: "570.86.15", Pass: true, Result: r}
}

// h100Fleet is nodes nodes of 8 H100s with ±2% noise from seed, named
// gpu001, gpu002, ...
func h100Fleet(nodes int, seed uint64) []probe.Verdict {
	rng := rand.New(rand.NewPCG(seed, 0))
	var out []probe.Verdict
	for i := range nodes {
		out = append(out, verdict(fmt.Sprintf("gpu%03d", i+1), h100, 8, h100Nominal, rng, 0.02))
	}
	return out
}

// asNodes is verdicts as Read would return them.
func asNodes(vs []probe.Verdict) []Node {
	out := make([]Node, len(vs))
	for i, v := range vs {
		out[i] = Node{Name: v.Node, Verdict: v}
	}
	return out
}

// writeJSON writes v as JSON to path, making its directory.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
}

// writeFile writes text to path, making its directory.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flagKey is a flag as node/gpu/metric.
func flagKey(f Flag) string {
	return fmt.Sprintf("%s/%d/%s", f.Node, f.GPU, f.Metric)
}

// flagKeys is every flag's key, in the report's order.
func flagKeys(r Report) []string {
	out := []string{}
	for _, f := range r.Flags {
		out = append(out, flagKey(f))
	}
	return out
}

// metricOf is model's summary of metric in r.
func metricOf(t *testing.T, r Report, model, metric string) Metric {
	t.Helper()
	for _, m := range r.Models {
		if m.Model != model {
			continue
		}
		for _, s := range m.Metrics {
			if s.Metric == metric {
				return s
			}
		}
	}
	t.Fatalf("no %s %s in the report", model, metric)
	return Metric{}
}
