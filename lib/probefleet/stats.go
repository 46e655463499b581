package probefleet

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
)

// judgeModel summarises each metric of one model and flags its GPUs.
func judgeModel(name string, g *group, o Options) (Model, []Flag) {
	m := Model{Model: name, Nodes: len(g.nodes), GPUs: g.gpus, Metrics: make([]Metric, 0, len(metrics))}
	var flags []Flag
	for i, metric := range metrics {
		s, f := judgeMetric(name, metric, g.values[i], o)
		m.Metrics = append(m.Metrics, s)
		flags = append(flags, f...)
	}
	return m, flags
}

// judgeMetric summarises one metric of one model and flags the samples
// below its median by more than o.Margin of it and by more than o.K x
// 1.4826 x MAD (the margin alone when the MAD is 0); with fewer than
// MinGPUs samples it flags none.
func judgeMetric(model, metric string, samples []sample, o Options) (Metric, []Flag) {
	s := Metric{Metric: metric, N: len(samples)}
	if len(samples) < MinGPUs {
		s.Note = TooFew
	}
	if len(samples) == 0 {
		return s, nil
	}
	v := make([]float64, len(samples))
	for i, x := range samples {
		v[i] = x.value
	}
	slices.Sort(v)
	s.Median = median(v)
	s.MAD = mad(v, s.Median)
	s.P10, s.P90 = quantile(v, 0.10), quantile(v, 0.90)
	if s.Note != "" {
		return s, nil
	}
	sigma := madScale * s.MAD
	var flags []Flag
	for _, x := range samples {
		below := s.Median - x.value
		if below <= o.Margin*s.Median || (sigma > 0 && below <= o.K*sigma) {
			continue
		}
		f := Flag{Node: x.node, GPU: x.gpu, BusID: x.busID, Model: model, Metric: metric,
			Value: x.value, Median: s.Median, BelowPct: below / s.Median * 100}
		if sigma > 0 {
			z := -below / sigma
			f.RobustZ = &z
		}
		flags = append(flags, f)
	}
	s.Flagged = len(flags)
	return s, flags
}

// median is the median of sorted values (not empty): the middle one, or
// the mean of the two middle ones.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// mad is the median absolute deviation of values (not empty) from med.
func mad(values []float64, med float64) float64 {
	d := make([]float64, len(values))
	for i, v := range values {
		d[i] = math.Abs(v - med)
	}
	slices.Sort(d)
	return median(d)
}

// quantile is the q-quantile of sorted values (not empty), interpolated
// between the two nearest ranks (as numpy's default and R's type 7).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// metricRank is a metric's place in the report's order.
func metricRank(metric string) int {
	return slices.Index(metrics[:], metric)
}

// compareFlags orders flags by node, GPU index, metric (the report's
// order), then model.
func compareFlags(a, b Flag) int {
	return cmp.Or(strings.Compare(a.Node, b.Node), cmp.Compare(a.GPU, b.GPU),
		cmp.Compare(metricRank(a.Metric), metricRank(b.Metric)), strings.Compare(a.Model, b.Model))
}

// flaggedNodes is the nodes of flags (ordered by compareFlags), with their
// flagged GPUs and what for.
func flaggedNodes(flags []Flag) []FlaggedNode {
	out := []FlaggedNode{}
	for _, f := range flags {
		if len(out) == 0 || out[len(out)-1].Node != f.Node {
			out = append(out, FlaggedNode{Node: f.Node, GPUs: []int{}, Metrics: []string{}})
		}
		n := &out[len(out)-1]
		if !slices.Contains(n.GPUs, f.GPU) {
			n.GPUs = append(n.GPUs, f.GPU)
		}
		if !slices.Contains(n.Metrics, f.Metric) {
			n.Metrics = append(n.Metrics, f.Metric)
		}
	}
	for i := range out {
		slices.Sort(out[i].GPUs)
		slices.SortFunc(out[i].Metrics, func(a, b string) int { return metricRank(a) - metricRank(b) })
	}
	return out
}

// sortedKeys is m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
