package fleet

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/drift"
)

// fleetOf adds each file's records in turn.
func fleetOf(files map[string][]drift.Record, order ...string) *Fleet {
	var fl Fleet
	for _, name := range order {
		fl.Add(File{Path: "fleet/" + name + ".jsonl", Node: name}, files[name])
	}
	return &fl
}

// A knob is one row however many nodes and GPUs it drifted on: its
// records, its nodes as a hostlist, its newest time; a GPU knob's rows of
// every GPU are one "gpu" row; a record without a kind counts as drift.
func TestFleetGroupsKnobs(t *testing.T) {
	inv := rec(30, "gpu07", "gpu_persistence", "gpu:GPU-aaaa", "on", "off")
	inv.Kind = drift.KindInvariant
	noKind := rec(1, "gpu03", "thp_enabled", "node", "never", "always")
	noKind.Kind = ""
	files := map[string][]drift.Record{
		"gpu01": {rec(0, "gpu01", "cpu_governor", "node", "performance", "powersave"),
			rec(50, "gpu01", "cpu_governor", "node", "performance", "powersave"),
			rec(2, "gpu01", "gpu_persistence", "gpu:GPU-1111", "on", "off"),
			rec(3, "gpu01", "gpu_persistence", "gpu:GPU-2222", "on", "off")},
		"gpu02": {rec(20, "gpu02", "cpu_governor", "node", "performance", "schedutil")},
		"gpu03": {rec(40, "gpu03", "cpu_governor", "node", "performance", "powersave"), noKind},
		"gpu07": {inv},
	}
	rep := fleetOf(files, "gpu01", "gpu02", "gpu03", "gpu07").Report(0)
	type row struct {
		kind, knob, scope string
		records, nodes    int
		hostlist          string
		last              int
	}
	want := []row{
		{drift.KindDrift, "cpu_governor", "node", 4, 3, "gpu[01-03]", 50},
		{drift.KindDrift, "gpu_persistence", "gpu", 2, 1, "gpu01", 3},
		{drift.KindInvariant, "gpu_persistence", "gpu", 1, 1, "gpu07", 30},
		{drift.KindDrift, "thp_enabled", "node", 1, 1, "gpu03", 1},
	}
	var got []row
	for _, k := range rep.Knobs {
		got = append(got, row{k.Kind, k.Knob, k.Scope, k.Records, k.Nodes, k.Hostlist, int(k.LastSeen.Sub(t0) / time.Minute)})
		if len(k.NodeNames) != k.Nodes {
			t.Errorf("%s: %d node names for %d nodes", k.Knob, len(k.NodeNames), k.Nodes)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("knobs:\n got %+v\nwant %+v", got, want)
	}
	if n := rep.Knobs[0].NodeNames; !reflect.DeepEqual(n, []string{"gpu01", "gpu02", "gpu03"}) {
		t.Errorf("node names %q", n)
	}
	if tot := (Totals{Records: 8, Knobs: 4, Nodes: 4, Files: 4}); rep.Totals != tot {
		t.Errorf("totals %+v, want %+v", rep.Totals, tot)
	}
	if rep.Files[2].Records != 2 || rep.Files[2].Node != "gpu03" {
		t.Errorf("file gpu03: %+v", rep.Files[2])
	}
}

// The top offenders: most records first, then by name; each with its
// distinct knobs and its most frequent knob (a tie goes to the first by
// name); --top cuts the list but not the node count.
func TestFleetTopNodes(t *testing.T) {
	files := map[string][]drift.Record{
		"gpu01": {rec(0, "gpu01", "cpu_governor", "node", "performance", "powersave"),
			rec(1, "gpu01", "vm_swappiness", "node", "10", "60"),
			rec(2, "gpu01", "vm_swappiness", "node", "10", "60")},
		"gpu02": {rec(0, "gpu02", "thp_enabled", "node", "never", "always"),
			rec(1, "gpu02", "cpu_governor", "node", "performance", "powersave")},
		"gpu03": {rec(0, "gpu03", "vm_swappiness", "node", "10", "60"),
			rec(9, "gpu03", "thp_enabled", "node", "never", "always")},
		"gpu04": {rec(0, "gpu04", "cpu_governor", "node", "performance", "powersave")},
	}
	rep := fleetOf(files, "gpu04", "gpu03", "gpu02", "gpu01").Report(3)
	want := []Node{
		{Node: "gpu01", Records: 3, Knobs: 2, TopKnob: "vm_swappiness", TopKnobRecords: 2, LastSeen: t0.Add(2 * time.Minute)},
		{Node: "gpu02", Records: 2, Knobs: 2, TopKnob: "cpu_governor", TopKnobRecords: 1, LastSeen: t0.Add(time.Minute)},
		{Node: "gpu03", Records: 2, Knobs: 2, TopKnob: "thp_enabled", TopKnobRecords: 1, LastSeen: t0.Add(9 * time.Minute)},
	}
	if !reflect.DeepEqual(rep.TopNodes, want) {
		t.Fatalf("top nodes:\n got %+v\nwant %+v", rep.TopNodes, want)
	}
	if rep.Totals.Nodes != 4 {
		t.Errorf("nodes %d, want 4 (--top cuts the list only)", rep.Totals.Nodes)
	}
	if all := fleetOf(files, "gpu01", "gpu02", "gpu03", "gpu04").Report(0); len(all.TopNodes) != 4 || all.TopNodes[3].Node != "gpu04" {
		t.Errorf("--top 0: %+v", all.TopNodes)
	}
}

// Rows of equal counts are ordered by name, whatever the order the files
// were read in: the report is the same.
func TestFleetTiesAreDeterministic(t *testing.T) {
	files := map[string][]drift.Record{
		"b1": {rec(5, "b1", "zeta", "node", "1", "2"), rec(0, "b1", "alpha", "node", "1", "2")},
		"a1": {rec(0, "a1", "mid", "node", "1", "2"), rec(9, "a1", "alpha", "node", "1", "2")},
		"c1": {rec(0, "c1", "zeta", "node", "1", "2"), rec(1, "c1", "mid", "node", "1", "2")},
	}
	first := fleetOf(files, "a1", "b1", "c1").Report(0)
	var knobs, nodes []string
	for _, k := range first.Knobs {
		knobs = append(knobs, k.Knob)
	}
	for _, n := range first.TopNodes {
		nodes = append(nodes, n.Node+":"+n.TopKnob)
	}
	if want := []string{"alpha", "mid", "zeta"}; !reflect.DeepEqual(knobs, want) {
		t.Errorf("knobs %q, want %q", knobs, want)
	}
	if want := []string{"a1:alpha", "b1:alpha", "c1:mid"}; !reflect.DeepEqual(nodes, want) {
		t.Errorf("nodes %q, want %q", nodes, want)
	}
	for _, order := range [][]string{{"c1", "b1", "a1"}, {"b1", "c1", "a1"}} {
		again := fleetOf(files, order...).Report(0)
		if !reflect.DeepEqual(again.Knobs, first.Knobs) || !reflect.DeepEqual(again.TopNodes, first.TopNodes) {
			t.Errorf("order %q gives another report:\n%+v\n%+v", order, again.Knobs, first.Knobs)
		}
	}
	// More nodes outrank fewer at equal records.
	wide := fleetOf(map[string][]drift.Record{
		"n1": {rec(0, "n1", "aa", "node", "1", "2"), rec(1, "n1", "aa", "node", "1", "2"), rec(0, "n1", "zz", "node", "1", "2")},
		"n2": {rec(0, "n2", "zz", "node", "1", "2")},
	}, "n1", "n2").Report(0)
	if wide.Knobs[0].Knob != "zz" {
		t.Errorf("at 2 records each, zz (2 nodes) should come before aa (1 node): %+v", wide.Knobs)
	}
}

// A record's own node wins; one without a node is the file's.
func TestFleetNodeFallsBackToFileName(t *testing.T) {
	var fl Fleet
	fl.Add(File{Path: "fleet/gpu05.jsonl", Node: "gpu05"}, []drift.Record{
		rec(0, "", "cpu_governor", "node", "performance", "powersave"),
		rec(1, "gpu09", "cpu_governor", "node", "performance", "powersave"),
	})
	fl.Add(File{Path: "fleet/gpu06/drift.jsonl", Node: "gpu06"}, []drift.Record{rec(2, "", "cpu_governor", "node", "performance", "powersave")})
	rep := fl.Report(0)
	if h := rep.Knobs[0].Hostlist; h != "gpu[05-06,09]" {
		t.Errorf("hostlist %q, want gpu[05-06,09]", h)
	}
	if len(rep.TopNodes) != 3 {
		t.Errorf("nodes %+v", rep.TopNodes)
	}
}

func TestWriteFleetReport(t *testing.T) {
	inv := rec(30, "gpu07", "gpu_persistence", "gpu:GPU-aaaa", "on", "off")
	inv.Kind = drift.KindInvariant
	fl := fleetOf(map[string][]drift.Record{
		"gpu01": {rec(0, "gpu01", "cpu_governor", "node", "performance", "powersave"), rec(50, "gpu01", "cpu_governor", "node", "performance", "powersave")},
		"gpu02": {rec(20, "gpu02", "cpu_governor", "node", "performance", "schedutil")},
		"gpu07": {inv, rec(5, "gpu07", "thp_enabled", "node", "never", "always")},
	}, "gpu01", "gpu02", "gpu07")
	fl.files[1].Skipped = drift.Skipped{Garbage: 2, Lines: []int{3, 4}}
	var b bytes.Buffer
	if err := WriteReport(&b, fl.Report(2)); err != nil {
		t.Fatal(err)
	}
	want := `FLEET: 5 records, 3 knobs, 3 nodes, 3 files (2 unreadable lines skipped)
KNOB             SCOPE  KIND       RECORDS  NODES  HOSTLIST    LAST SEEN
cpu_governor     node   drift      3        2      gpu[01-02]  2026-03-01 10:50:00Z
gpu_persistence  gpu    invariant  1        1      gpu07       2026-03-01 10:30:00Z
thp_enabled      node   drift      1        1      gpu07       2026-03-01 10:05:00Z

TOP NODES (2 of 3; --top 0 lists all)
NODE   RECORDS  KNOBS  MOST FREQUENT KNOB
gpu01  2        1      cpu_governor (2)
gpu07  2        2      gpu_persistence (1)
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := WriteReport(&b, (&Fleet{}).Report(10)); err != nil || b.String() != "FLEET: 0 records, 0 knobs, 0 nodes, 0 files\nno drift recorded\n" {
		t.Errorf("empty: %q %v", b.String(), err)
	}
}

// The JSON document's keys are snake_case and stable; empty lists are [].
func TestWriteFleetReportJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReportJSON(&b, (&Fleet{}).Report(10)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"files": []`) || !strings.Contains(b.String(), `"knobs": []`) || !strings.Contains(b.String(), `"top_nodes": []`) {
		t.Errorf("empty lists are not []:\n%s", b.String())
	}
	fl := fleetOf(map[string][]drift.Record{"gpu01": {rec(0, "gpu01", "cpu_governor", "node", "performance", "powersave")}}, "gpu01")
	b.Reset()
	if err := WriteReportJSON(&b, fl.Report(10)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string { return slices.Sorted(maps.Keys(v.(map[string]any))) }
	for _, c := range []struct {
		v    any
		want []string
	}{
		{doc, []string{"files", "knobs", "top_nodes", "totals"}},
		{doc["files"].([]any)[0], []string{"node", "path", "records", "skipped"}},
		{doc["knobs"].([]any)[0], []string{"hostlist", "kind", "knob", "last_seen", "node_names", "nodes", "records", "scope"}},
		{doc["top_nodes"].([]any)[0], []string{"knobs", "last_seen", "most_frequent_knob", "most_frequent_knob_records", "node", "records"}},
		{doc["totals"], []string{"files", "knobs", "nodes", "records", "skipped"}},
	} {
		if got := keys(c.v); !reflect.DeepEqual(got, c.want) {
			t.Errorf("keys %q, want %q", got, c.want)
		}
	}
	if k := doc["knobs"].([]any)[0].(map[string]any); k["hostlist"] != "gpu01" || k["last_seen"] != "2026-03-01T10:00:00Z" {
		t.Errorf("knob %v", k)
	}
}
