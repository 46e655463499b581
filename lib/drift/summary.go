package drift

import (
	"sort"
	"time"
)

// Group is every record of one kind, knob and scope: how often it drifted,
// when last, and on which nodes.
type Group struct {
	Kind     string    `json:"kind"`
	Knob     string    `json:"knob"`
	Scope    string    `json:"scope"`
	Count    int       `json:"count"`
	LastSeen time.Time `json:"last_seen"`
	Nodes    []string  `json:"nodes"` // sorted, each once
}

// Summarize groups recs by kind, knob and scope, the most frequent first
// (then the most recent, then by knob and scope).
func Summarize(recs []Record) []Group {
	type key struct{ kind, knob, scope string }
	idx := map[key]int{}
	var gs []Group
	nodes := map[key]map[string]bool{}
	for _, r := range recs {
		k := key{r.Kind, r.Knob, r.Scope}
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, Group{Kind: r.Kind, Knob: r.Knob, Scope: r.Scope})
			nodes[k] = map[string]bool{}
		}
		g := &gs[i]
		g.Count++
		if r.Time.After(g.LastSeen) {
			g.LastSeen = r.Time
		}
		if !nodes[k][r.Node] {
			nodes[k][r.Node] = true
			g.Nodes = append(g.Nodes, r.Node)
		}
	}
	for i := range gs {
		sort.Strings(gs[i].Nodes)
	}
	sort.SliceStable(gs, func(a, b int) bool {
		x, y := gs[a], gs[b]
		switch {
		case x.Count != y.Count:
			return x.Count > y.Count
		case !x.LastSeen.Equal(y.LastSeen):
			return x.LastSeen.After(y.LastSeen)
		case x.Knob != y.Knob:
			return x.Knob < y.Knob
		case x.Scope != y.Scope:
			return x.Scope < y.Scope
		}
		return x.Kind < y.Kind
	})
	return gs
}
