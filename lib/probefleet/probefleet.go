// Package probefleet is the fleet-relative report over many nodes' saved
// probe verdicts (lib/probe, each node's probe-verdict.json copied to one
// place): every GPU of a model is held to the median of that model's GPUs
// across the fleet, so that one slow GPU among thousands stands out even
// when it passed its node's floors. read.go finds and reads the verdict
// files; probefleet.go and stats.go judge them (pure functions); text.go
// writes the report for a person. Report marshals to JSON as it is.
package probefleet

import (
	"math"
	"slices"
	"strings"
	"time"

	"gpuprep/lib/probe"
)

// The metrics, as named in the report: each GPU's host-to-device,
// device-to-host and device-memory bandwidth, its FP32 compute, and the
// median of the peer copies into it that had peer access.
const (
	MetricH2D    = "h2d_gbps"
	MetricD2H    = "d2h_gbps"
	MetricHBM    = "hbm_gbps"
	MetricTFLOPS = "tflops"
	MetricP2P    = "p2p_gbps"
)

// metrics is every metric, in the report's order.
var metrics = [...]string{MetricH2D, MetricD2H, MetricHBM, MetricTFLOPS, MetricP2P}

// Defaults of Options, and the fewest values a metric is judged on.
const (
	DefaultMargin = 0.10
	DefaultK      = 3
	MinGPUs       = 3
	// madScale makes the MAD estimate the standard deviation of normally
	// distributed values.
	madScale = 1.4826
	// TooFew is the note of a metric with fewer than MinGPUs values.
	TooFew = "too few to compare"
	// unnamed is the model of GPUs whose verdict names none.
	unnamed = "unknown"
)

// Node is one node's verdict as Read found it.
type Node struct {
	Name    string        // Verdict.Node, else the file's name
	Path    string        // the file it was read from ("" when not read)
	Verdict probe.Verdict // Result is not nil when Read returns it
}

// Options say how far below the fleet a GPU must be to be flagged; a
// value that is zero, negative or NaN takes its default.
type Options struct {
	// Margin is the least fraction of the median a value must be below
	// it by (default 0.10: 10%).
	Margin float64
	// K is the least robust z-score (in scaled MADs) a value must be below
	// the median by (default 3); not used when the MAD is 0.
	K float64
}

// withDefaults is o with its defaults filled in.
func (o Options) withDefaults() Options {
	if !(o.Margin > 0) {
		o.Margin = DefaultMargin
	}
	if !(o.K > 0) {
		o.K = DefaultK
	}
	return o
}

// Report is the fleet judged.
type Report struct {
	Margin float64 `json:"margin"`
	K      float64 `json:"k"`
	Nodes  int     `json:"nodes"` // verdicts read, forced ones included
	GPUs   int     `json:"gpus"`  // GPUs in them
	// Flags are the GPUs below their model's fleet, by node, GPU index
	// and metric; FlaggedNodes the nodes they are on, by name.
	Flags        []Flag        `json:"flags"`
	FlaggedNodes []FlaggedNode `json:"flagged_nodes"`
	// Failed are the verdicts that failed their own floors, Forced those
	// run on busy GPUs (--force): their values are neither in the
	// medians nor judged. Both by node.
	Failed []NodeVerdict `json:"failed"`
	Forced []NodeVerdict `json:"forced"`
	Models []Model       `json:"models"` // by name
}

// Flag is one GPU's metric below its model's fleet.
type Flag struct {
	Node     string  `json:"node"`
	GPU      int     `json:"gpu"` // Target.Index
	BusID    string  `json:"bus_id"`
	Model    string  `json:"model"`
	Metric   string  `json:"metric"`
	Value    float64 `json:"value"`
	Median   float64 `json:"median"`
	BelowPct float64 `json:"below_pct"` // (median - value) / median x 100
	// RobustZ is (value - median) / (1.4826 x MAD), negative below the
	// median; null when the MAD is 0.
	RobustZ *float64 `json:"robust_z"`
}

// FlaggedNode is a node with at least one flagged GPU.
type FlaggedNode struct {
	Node    string   `json:"node"`
	GPUs    []int    `json:"gpus"`    // the flagged GPUs' indexes, sorted
	Metrics []string `json:"metrics"` // what they were flagged for, in the report's order
}

// NodeVerdict is a node's own verdict: failed, forced or both.
type NodeVerdict struct {
	Node   string    `json:"node"`
	Time   time.Time `json:"time"`
	Pass   bool      `json:"pass"`
	Forced bool      `json:"forced"`
	Codes  []string  `json:"codes"` // its findings' codes, sorted, each once
}

// Model is one GPU model across the fleet.
type Model struct {
	Model   string   `json:"model"`
	Nodes   int      `json:"nodes"`   // nodes with a GPU of the model, forced ones included
	GPUs    int      `json:"gpus"`    // GPUs of the model, forced and failed ones included
	Metrics []Metric `json:"metrics"` // every metric, in the report's order
}

// Metric is one metric of one model across the fleet: the values that
// count (not forced, not missing, zero or failed).
type Metric struct {
	Metric  string  `json:"metric"`
	N       int     `json:"n"` // values counted
	Median  float64 `json:"median"`
	MAD     float64 `json:"mad"`
	P10     float64 `json:"p10"`
	P90     float64 `json:"p90"`
	Flagged int     `json:"flagged"`        // GPUs flagged for it
	Note    string  `json:"note,omitempty"` // TooFew when N < MinGPUs
}

// sample is one GPU's value of one metric.
type sample struct {
	node  string
	gpu   int
	busID string
	value float64
}

// group is one model's values across the fleet.
type group struct {
	nodes  map[string]bool
	gpus   int
	values [len(metrics)][]sample
}

// Build judges nodes: per GPU model and metric, the median and MAD of the
// values of every GPU of the model that is not on a forced verdict, and
// the GPUs below the median by more than o.Margin of it and by more than
// o.K scaled MADs (the margin alone when the MAD is 0); a metric with
// fewer than MinGPUs values is not judged. Nodes may come in any order.
func Build(nodes []Node, o Options) Report {
	o = o.withDefaults()
	nodes = slices.Clone(nodes)
	slices.SortStableFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	r := Report{Margin: o.Margin, K: o.K, Nodes: len(nodes), Flags: []Flag{}, FlaggedNodes: []FlaggedNode{},
		Failed: []NodeVerdict{}, Forced: []NodeVerdict{}, Models: []Model{}}
	groups := map[string]*group{}
	for _, n := range nodes {
		v := n.Verdict
		if !v.Pass || v.Forced {
			nv := NodeVerdict{Node: n.Name, Time: v.Time, Pass: v.Pass, Forced: v.Forced, Codes: codes(v.Findings)}
			if !v.Pass {
				r.Failed = append(r.Failed, nv)
			}
			if v.Forced {
				r.Forced = append(r.Forced, nv)
			}
		}
		if v.Result != nil {
			r.GPUs += len(v.Result.GPUs)
			collect(groups, n.Name, v.Result, v.Forced)
		}
	}
	for _, name := range sortedKeys(groups) {
		m, flags := judgeModel(name, groups[name], o)
		r.Models = append(r.Models, m)
		r.Flags = append(r.Flags, flags...)
	}
	slices.SortStableFunc(r.Flags, compareFlags)
	r.FlaggedNodes = flaggedNodes(r.Flags)
	return r
}

// codes is the findings' codes, sorted, each once.
func codes(findings []probe.Finding) []string {
	out := []string{}
	for _, f := range findings {
		out = append(out, f.Code)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collect adds one node's GPUs to their models' groups, by GPU index; a
// forced node's GPUs are counted but their values are not kept.
func collect(groups map[string]*group, node string, r *probe.Result, forced bool) {
	gpus := slices.Clone(r.GPUs)
	slices.SortStableFunc(gpus, func(a, b probe.GPUResult) int { return a.Index - b.Index })
	for _, g := range gpus {
		model := g.Name
		if model == "" {
			model = unnamed
		}
		grp := groups[model]
		if grp == nil {
			grp = &group{nodes: map[string]bool{}}
			groups[model] = grp
		}
		grp.nodes[node] = true
		grp.gpus++
		if forced || g.Error != "" {
			continue
		}
		for i, v := range values(g, r.Pairs) {
			if v > 0 && !math.IsInf(v, 0) {
				grp.values[i] = append(grp.values[i], sample{node: node, gpu: g.Index, busID: g.BusID, value: v})
			}
		}
	}
}

// values is a GPU's value of each metric, in the report's order; 0 where
// it has none (the measurement failed or was not taken).
func values(g probe.GPUResult, pairs []probe.Pair) [len(metrics)]float64 {
	bw := func(m probe.Measurement) float64 {
		if m.Error != "" {
			return 0
		}
		return m.GBps
	}
	var tflops float64
	if g.Compute.Error == "" {
		tflops = g.Compute.TFLOPS
	}
	return [...]float64{bw(g.H2D), bw(g.D2H), bw(g.D2D), tflops, p2pInto(g.Index, pairs)}
}

// p2pInto is the median of the peer copies into GPU index that had peer
// access and a value; 0 when none did.
func p2pInto(index int, pairs []probe.Pair) float64 {
	var v []float64
	for _, p := range pairs {
		if p.To == index && p.PeerAccess && p.Error == "" && p.GBps > 0 && !math.IsInf(p.GBps, 0) {
			v = append(v, p.GBps)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return median(v)
}
