package drift

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func history() []Record {
	inv := rec(30, "gpu03", "gpu.persistence", "GPU-5c1f", "on", "off")
	inv.Kind = KindInvariant
	return []Record{
		rec(0, "gpu01", "cpu.governor", "0-31", "performance", "powersave"),
		rec(10, "gpu02", "cpu.governor", "0-31", "performance", "schedutil"),
		rec(20, "gpu01", "thp.enabled", "node", "never", ""),
		inv,
		rec(40, "gpu04", "cpu.governor", "0-31", "performance", "power save\t\x1b[31m"),
	}
}

func TestWriteReport(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, history()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "SUMMARY: 5 records, 3 knob/scope pairs, 4 nodes") {
		t.Fatalf("first line %q", lines[0])
	}
	// The most frequent first, with the nodes compacted.
	if f := strings.Fields(lines[2]); len(f) != 7 || f[0] != "cpu.governor" || f[3] != "3" || f[6] != "gpu[01-02,04]" {
		t.Fatalf("summary row %q", lines[2])
	}
	for _, want := range []string{
		"RECENT (newest first)",
		"performance → \"power save\\t\\x1b[31m\"", // quoted, escape sequence defused
		"never → (empty)",
		"on → off (invariant)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("a raw escape character reached the terminal")
	}
	// Newest first among the records.
	if i, j := strings.Index(out, "2026-03-01 10:40:00Z"), strings.Index(out, "2026-03-01 10:00:00Z  gpu01"); i < 0 || j < 0 || i > j {
		t.Errorf("records not newest first (%d, %d)", i, j)
	}
}

func TestWriteReportEmptyAndLimit(t *testing.T) {
	var b bytes.Buffer
	WriteReport(&b, nil)
	if b.String() != "no drift recorded\n" {
		t.Fatalf("empty: %q", b.String())
	}
	var many []Record
	for i := 0; i < RecentLimit+7; i++ {
		many = append(many, rec(i, "gpu01", "cpu.governor", "0-31", "performance", "powersave"))
	}
	b.Reset()
	WriteReport(&b, many)
	if !strings.Contains(b.String(), "newest 50 of 57") || strings.Count(b.String(), "powersave") != RecentLimit {
		t.Fatalf("limit not applied:\n%s", b.String())
	}
}

func TestWriteReportJSON(t *testing.T) {
	var b bytes.Buffer
	recs := history()
	recs[0], recs[4] = recs[4], recs[0] // out of order in the file
	if err := WriteReportJSON(&b, recs); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Summary) != 3 || rep.Summary[0].Knob != "cpu.governor" || rep.Summary[0].Count != 3 ||
		!rep.Summary[0].LastSeen.Equal(t0.Add(40*time.Minute)) || len(rep.Summary[0].Nodes) != 3 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	if len(rep.Records) != 5 || !rep.Records[0].Time.Equal(t0) || !rep.Records[4].Time.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("records not oldest first: %+v", rep.Records)
	}
	for _, key := range []string{`"last_seen"`, `"summary"`, `"records"`, `"expected"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks key %s", key)
		}
	}
	b.Reset()
	WriteReportJSON(&b, nil)
	if strings.Contains(b.String(), "null") {
		t.Fatalf("empty report has nulls: %s", b.String())
	}
}

// Counts agree with their nouns: "1 record", not "1 record(s)".
func TestReportPlurals(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, history()[:1]); err != nil {
		t.Fatal(err)
	}
	if first := strings.SplitN(b.String(), "\n", 2)[0]; first != "SUMMARY: 1 record, 1 knob/scope pair, 1 node" {
		t.Errorf("first line %q", first)
	}
	for s, want := range map[string]Skipped{
		"skipped 1 unreadable line in " + FileName + " (line 3)":                              {Garbage: 1, Lines: []int{3}},
		"skipped 2 unreadable lines and a torn last line in " + FileName + " (lines 3, 4, 9)": {Garbage: 2, Torn: 1, Lines: []int{3, 4, 9}},
	} {
		if got := want.String(); got != s {
			t.Errorf("Skipped %+v: %q, want %q", want, got, s)
		}
	}
}
