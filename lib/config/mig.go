package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/slurm"
)

// MIGSection is [mig]: the MIG layout each GPU is expected to have, in
// mig-parted's spirit: a layout per GPU selector, for the whole node set
// ([mig.layout]), for nodes by hostlist ([mig.nodes."gpu[01-04]".layout]),
// for a partition ([mig.partitions.NAME.layout]), and named layouts a job
// may ask for ([mig.requests.NAME.layout], with --comment <comment_key>_mig=NAME).
type MIGSection struct {
	// Reconfigure lets the prolog change a GPU's MIG layout to the expected
	// one when no process uses it and no other job holds it; false only
	// checks. Job requests are honoured only with it.
	Reconfigure bool `toml:"reconfigure"`
	// Layout maps a GPU selector to its MIG devices. A selector is a GPU
	// index ("0"), a GPU model as NVML names it ("NVIDIA A100-SXM4-40GB"),
	// a GPU type as gres.conf names it ("h100"), or "all"; the most
	// specific one applies, in that order.
	Layout     map[string]MIGLayout `toml:"layout"`
	Nodes      map[string]MIGScope  `toml:"nodes"`      // by hostlist expression
	Partitions map[string]MIGScope  `toml:"partitions"` // by SLURM_JOB_PARTITION
	Requests   map[string]MIGScope  `toml:"requests"`   // named layouts a job may ask for
}

// MIGScope is one scope's layouts ([mig.nodes.X], [mig.partitions.X],
// [mig.requests.X]), with the selectors of [mig.layout].
type MIGScope struct {
	Layout map[string]MIGLayout `toml:"layout"`
}

// MIGLayout is one GPU's MIG devices: their profile names, one per device
// ("3g.40gb", "1c.3g.40gb"); empty means MIG disabled. TOML gives either
// the list (["3g.40gb", "3g.40gb"]) or counts ({"1g.10gb" = 7}).
type MIGLayout []string

// maxMIGDevices bounds a count in a layout: no GPU has more MIG devices
// (seven 1-slice instances, each with up to 8 compute instances on none).
const maxMIGDevices = 7

// UnmarshalTOML takes a list of profile names or a table of counts.
func (l *MIGLayout) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case []any:
		out := MIGLayout{}
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("must be a list of MIG profile names or a table of counts")
			}
			out = append(out, s)
		}
		*l = out
		return nil
	case map[string]any:
		out := MIGLayout{}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			n, ok := v[name].(int64)
			if !ok || n < 0 || n > maxMIGDevices {
				return fmt.Errorf("%q: the count must be 0..%d", name, maxMIGDevices)
			}
			for range n {
				out = append(out, name)
			}
		}
		*l = out
		return nil
	}
	return fmt.Errorf("must be a list of MIG profile names or a table of counts")
}

// MIGGPU is what layout selectors match a GPU by.
type MIGGPU struct {
	Index int
	Model string // NVML's product name
	Type  string // gres type after [gres.type_names]
}

// MIGWhere is the job and node a layout is chosen for.
type MIGWhere struct {
	Node      string // SLURMD_NODENAME
	Partition string // SLURM_JOB_PARTITION
	Request   string // the layout the job asked for; "" for none
}

// Configured says whether any MIG layout is configured at all.
func (m MIGSection) Configured() bool {
	return len(m.Layout) > 0 || len(m.Nodes) > 0 || len(m.Partitions) > 0 || len(m.Requests) > 0
}

// LayoutFor returns the MIG devices expected on GPU g, and which table gave
// them ("mig.requests.small", "mig.partitions.inf", "mig.nodes.gpu[01-04]",
// "mig"). The job's request wins, then its partition, then the node, then
// [mig.layout]; in each, the most specific selector. ok is false when
// nothing applies: the GPU's MIG layout is not checked. A node that several
// [mig.nodes] hostlists name takes the first in sorted order.
func (m MIGSection) LayoutFor(g MIGGPU, w MIGWhere) (layout []string, from string, ok bool) {
	if sc, has := m.Requests[w.Request]; has && w.Request != "" {
		if l, ok := pickLayout(sc.Layout, g); ok {
			return l, "mig.requests." + w.Request, true
		}
	}
	if sc, has := m.Partitions[w.Partition]; has && w.Partition != "" {
		if l, ok := pickLayout(sc.Layout, g); ok {
			return l, "mig.partitions." + w.Partition, true
		}
	}
	if w.Node != "" {
		for _, expr := range slices.Sorted(maps.Keys(m.Nodes)) {
			if hl, err := slurm.ParseHostlist(expr); err != nil || !hl.Contains(w.Node) {
				continue
			}
			if l, ok := pickLayout(m.Nodes[expr].Layout, g); ok {
				return l, "mig.nodes." + expr, true
			}
		}
	}
	if l, ok := pickLayout(m.Layout, g); ok {
		return l, "mig", true
	}
	return nil, "", false
}

// pickLayout is the layout of the most specific selector matching g: its
// index, its model, its type (both case-insensitive), "all".
func pickLayout(layouts map[string]MIGLayout, g MIGGPU) ([]string, bool) {
	if l, ok := layouts[strconv.Itoa(g.Index)]; ok {
		return l, true
	}
	for _, want := range []string{g.Model, g.Type} {
		for _, k := range slices.Sorted(maps.Keys(layouts)) {
			if want != "" && strings.EqualFold(k, want) {
				return layouts[k], true
			}
		}
	}
	l, ok := layouts["all"]
	return l, ok
}

// MIGRequest is the MIG layout a job asks for in its comment
// ("<comment_key>_mig=NAME", e.g. gpuprep_mig=small), and a warning when the
// request cannot be honoured: no such layout in [mig.requests], or [mig]
// reconfigure is off (a requested layout is only ever made, never just
// checked: a user's request must not drain the node).
func (c *Config) MIGRequest(comment string) (name, warning string) {
	if c.Selection.CommentKey == "" {
		return "", ""
	}
	key := c.Selection.CommentKey + "_mig"
	names := commentNames(comment, key)
	if len(names) == 0 {
		return "", ""
	}
	name = names[0]
	if _, ok := c.MIG.Requests[name]; !ok {
		known := slices.Sorted(maps.Keys(c.MIG.Requests))
		return "", fmt.Sprintf("MIG layout %q requested (%s=%s) is not in [mig.requests] (%s); using the node's", short(name), key, short(name), orNone(known))
	}
	if !c.MIG.Reconfigure {
		return "", fmt.Sprintf("MIG layout %q requested, but [mig] reconfigure is off; using the node's", short(name))
	}
	return name, ""
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none defined"
	}
	return strings.Join(names, ", ")
}
