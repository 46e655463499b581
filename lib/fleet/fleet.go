// Package fleet is the fleet report, gpuprep-epilog --report --from: the
// drift records (lib/drift) of many nodes' drift files, copied to one
// place, grouped by knob (on which nodes, how often, when last) and by
// node (the top offenders). read.go finds and reads the files a --from
// PATH names; fleet.go counts the records and writes the report as tables
// or JSON, to an io.Writer, opening nothing.
package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"gpuprep/lib/drift"
	"gpuprep/lib/evidence"
	"gpuprep/lib/knobval"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
)

// DefaultTop is how many nodes TOP NODES lists unless --top says otherwise.
const DefaultTop = 10

// File is one drift file of a fleet report.
type File struct {
	Path string `json:"path"`
	// Node is the node the file's name says (gpu01 for gpu01.jsonl,
	// gpu01.drift.jsonl and gpu01/drift.jsonl): the node of its records
	// that name none. A record's own node wins.
	Node    string        `json:"node"`
	Records int           `json:"records"` // records kept (at or after --since)
	Skipped drift.Skipped `json:"skipped"` // unreadable lines
}

// Knob is every record of one kind, knob and scope across the fleet.
type Knob struct {
	Kind  string `json:"kind"`
	Knob  string `json:"knob"`
	Scope string `json:"scope"` // Scope of the records' scope
	// Records is how many records; Nodes on how many nodes, Hostlist and
	// NodeNames which (Slurm's hostlist form; sorted, each once).
	Records   int       `json:"records"`
	Nodes     int       `json:"nodes"`
	Hostlist  string    `json:"hostlist"`
	NodeNames []string  `json:"node_names"`
	LastSeen  time.Time `json:"last_seen"` // UTC
}

// Node is one node's share of the fleet's records (both kinds).
type Node struct {
	Node    string `json:"node"`
	Records int    `json:"records"`
	Knobs   int    `json:"knobs"` // distinct knob names
	// TopKnob is the knob name with the most records on the node (ties:
	// the first by name), TopKnobRecords how many.
	TopKnob        string    `json:"most_frequent_knob"`
	TopKnobRecords int       `json:"most_frequent_knob_records"`
	LastSeen       time.Time `json:"last_seen"` // UTC
}

// Totals are the fleet report's counts: records, knob rows, nodes with
// a record, files read and the unreadable lines skipped in them.
type Totals struct {
	Records int `json:"records"`
	Knobs   int `json:"knobs"`
	Nodes   int `json:"nodes"`
	Files   int `json:"files"`
	Skipped int `json:"skipped"`
}

// Report is the fleet summary, and WriteReportJSON's document.
type Report struct {
	Totals   Totals `json:"totals"`
	Files    []File `json:"files"`     // in the order read
	Knobs    []Knob `json:"knobs"`     // the most records first
	TopNodes []Node `json:"top_nodes"` // the most records first, at most top
	// JobGPUs are the GPUs of the job evidence records read beside the
	// drift files (gpuprep-epilog --report --from), the most throttled
	// first; none when there were none.
	JobGPUs []evidence.FleetGPU `json:"job_gpus,omitempty"`
}

// Fleet gathers the records of many drift files; its zero value is empty.
type Fleet struct {
	files []File
	knobs map[key]*knobTally
	nodes map[string]*nodeTally
	total int
}

type key struct{ kind, knob, scope string }

type knobTally struct {
	records int
	last    time.Time
	nodes   map[string]bool
}

type nodeTally struct {
	records int
	last    time.Time
	knobs   map[string]int // records by knob name
}

// Scope is the scope a fleet report groups a record under: "gpu" for
// any one GPU's scope ("gpu:<uuid>": each GPU of the fleet has its own), the
// record's scope otherwise ("node").
func Scope(scope string) string {
	if _, ok := knobval.ScopeGPU(scope); ok {
		return "gpu"
	}
	return scope
}

// Add counts file's records: a record without a node is file.Node's, one
// without a kind is drift.KindDrift (as Append writes it). file.Records is set to
// len(recs).
func (fl *Fleet) Add(file File, recs []drift.Record) {
	if fl.knobs == nil {
		fl.knobs = map[key]*knobTally{}
		fl.nodes = map[string]*nodeTally{}
	}
	file.Records = len(recs)
	fl.files = append(fl.files, file)
	fl.total += len(recs)
	for _, r := range recs {
		node := r.Node
		if node == "" {
			node = file.Node
		}
		kind := r.Kind
		if kind == "" {
			kind = drift.KindDrift
		}
		k := key{kind, r.Knob, Scope(r.Scope)}
		g := fl.knobs[k]
		if g == nil {
			g = &knobTally{nodes: map[string]bool{}}
			fl.knobs[k] = g
		}
		g.records++
		g.nodes[node] = true
		if r.Time.After(g.last) {
			g.last = r.Time
		}
		n := fl.nodes[node]
		if n == nil {
			n = &nodeTally{knobs: map[string]int{}}
			fl.nodes[node] = n
		}
		n.records++
		n.knobs[r.Knob]++
		if r.Time.After(n.last) {
			n.last = r.Time
		}
	}
}

// Report is the summary of what Add counted. Knobs come the most records
// first, then on the most nodes, then by knob, scope and kind; nodes the
// most records first, then by name. top > 0 keeps that many nodes, 0 all.
func (fl *Fleet) Report(top int) Report {
	rep := Report{Files: append([]File{}, fl.files...), Knobs: []Knob{}, TopNodes: []Node{}}
	for k, g := range fl.knobs {
		names := make([]string, 0, len(g.nodes))
		for n := range g.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		rep.Knobs = append(rep.Knobs, Knob{Kind: k.kind, Knob: k.knob, Scope: k.scope, Records: g.records,
			Nodes: len(names), Hostlist: slurm.CompactHostlist(names), NodeNames: names, LastSeen: g.last.UTC()})
	}
	sort.Slice(rep.Knobs, func(a, b int) bool {
		x, y := rep.Knobs[a], rep.Knobs[b]
		switch {
		case x.Records != y.Records:
			return x.Records > y.Records
		case x.Nodes != y.Nodes:
			return x.Nodes > y.Nodes
		case x.Knob != y.Knob:
			return x.Knob < y.Knob
		case x.Scope != y.Scope:
			return x.Scope < y.Scope
		}
		return x.Kind < y.Kind
	})
	for name, n := range fl.nodes {
		fn := Node{Node: name, Records: n.records, Knobs: len(n.knobs), LastSeen: n.last.UTC()}
		for knob, c := range n.knobs {
			if c > fn.TopKnobRecords || c == fn.TopKnobRecords && knob < fn.TopKnob {
				fn.TopKnob, fn.TopKnobRecords = knob, c
			}
		}
		rep.TopNodes = append(rep.TopNodes, fn)
	}
	sort.Slice(rep.TopNodes, func(a, b int) bool {
		x, y := rep.TopNodes[a], rep.TopNodes[b]
		if x.Records != y.Records {
			return x.Records > y.Records
		}
		return x.Node < y.Node
	})
	skipped := 0
	for _, f := range fl.files {
		skipped += f.Skipped.Total()
	}
	rep.Totals = Totals{Records: fl.total, Knobs: len(rep.Knobs), Nodes: len(rep.TopNodes), Files: len(fl.files), Skipped: skipped}
	if top > 0 && len(rep.TopNodes) > top {
		rep.TopNodes = rep.TopNodes[:top]
	}
	return rep
}

// WriteReport prints rep as tables: a header line of totals, one row
// per knob (KNOB, SCOPE, KIND, RECORDS, NODES, HOSTLIST, LAST SEEN), then
// TOP NODES (NODE, RECORDS, KNOBS, MOST FREQUENT KNOB).
func WriteReport(w io.Writer, rep Report) error {
	t := rep.Totals
	head := fmt.Sprintf("FLEET: %s, %s, %s, %s", plural.Count(t.Records, "record", "records"),
		plural.Count(t.Knobs, "knob", "knobs"), plural.Count(t.Nodes, "node", "nodes"), plural.Count(t.Files, "file", "files"))
	if t.Skipped > 0 {
		head += fmt.Sprintf(" (%s skipped)", plural.Count(t.Skipped, "unreadable line", "unreadable lines"))
	}
	if t.Records == 0 {
		_, err := fmt.Fprintf(w, "%s\nno drift recorded\n", head)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	fmt.Fprintln(tw, "KNOB\tSCOPE\tKIND\tRECORDS\tNODES\tHOSTLIST\tLAST SEEN")
	for _, k := range rep.Knobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", drift.Show(k.Knob), drift.Show(k.Scope), drift.Show(k.Kind), k.Records,
			k.Nodes, drift.Show(k.Hostlist), k.LastSeen.UTC().Format(drift.TimeFormat))
	}
	title := "TOP NODES"
	if len(rep.TopNodes) < t.Nodes {
		title = fmt.Sprintf("TOP NODES (%d of %d; --top 0 lists all)", len(rep.TopNodes), t.Nodes)
	}
	fmt.Fprintf(tw, "\n%s\n", title)
	fmt.Fprintln(tw, "NODE\tRECORDS\tKNOBS\tMOST FREQUENT KNOB")
	for _, n := range rep.TopNodes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s (%d)\n", drift.Show(n.Node), n.Records, n.Knobs, drift.Show(n.TopKnob), n.TopKnobRecords)
	}
	return tw.Flush()
}

// WriteReportJSON writes rep as one indented JSON document.
func WriteReportJSON(w io.Writer, rep Report) error {
	if rep.Files == nil {
		rep.Files = []File{}
	}
	if rep.Knobs == nil {
		rep.Knobs = []Knob{}
	}
	if rep.TopNodes == nil {
		rep.TopNodes = []Node{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
