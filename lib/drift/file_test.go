package drift

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAppendRead(t *testing.T) {
	sp := newSpool(t)
	if recs, sk, err := Read(sp, time.Time{}); recs != nil || sk.Total() != 0 || err != nil {
		t.Fatalf("no file: %v %v %v", recs, sk, err)
	}
	a := []Record{rec(0, "gpu01", "cpu.governor", "0-31", "performance", "powersave"),
		rec(5, "gpu02", "gpu.persistence", "0", "1", "0")}
	a[1].Kind = KindInvariant
	if err := Append(sp, a); err != nil {
		t.Fatal(err)
	}
	b := rec(9, "gpu01", "vm.swappiness", "node", "10", "60")
	b.Time, b.Kind = time.Time{}, "" // filled in by Append
	before := time.Now()
	if err := Append(sp, []Record{b}); err != nil {
		t.Fatal(err)
	}
	got, sk, err := Read(sp, time.Time{})
	if err != nil || sk.Total() != 0 || len(got) != 3 {
		t.Fatalf("Read: %d records, %+v, %v", len(got), sk, err)
	}
	if !reflect.DeepEqual(got[:2], a) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got[:2], a)
	}
	if got[2].Kind != KindDrift || got[2].Time.Before(before.Add(-time.Second)) {
		t.Fatalf("defaults not filled: %+v", got[2])
	}
	since, _, _ := Read(sp, t0.Add(5*time.Minute))
	if len(since) != 2 || since[0].Knob != "gpu.persistence" {
		t.Fatalf("since filter: %+v", since)
	}
	line := strings.SplitN(readFile(t, filepath.Join(sp.Dir(), FileName)), "\n", 2)[0]
	want := `{"time":"2026-03-01T10:00:00Z","node":"gpu01","job":"1001","user":"alice","knob":"cpu.governor","scope":"0-31","expected":"performance","found":"powersave","kind":"drift"}`
	if line != want {
		t.Fatalf("line format:\n got %s\nwant %s", line, want)
	}
}

func TestAppendRefusesRecordWithoutKnob(t *testing.T) {
	sp := newSpool(t)
	err := Append(sp, []Record{rec(0, "n", "k", "s", "a", "b"), {Node: "n", Job: "7"}})
	if err == nil {
		t.Fatal("accepted a record without a knob")
	}
	if _, err := os.Stat(filepath.Join(sp.Dir(), FileName)); !os.IsNotExist(err) {
		t.Fatal("part of a refused batch was written")
	}
}

// TestReadToleratesBadLines: garbage, records without a knob or time, and a
// huge line are skipped and counted; a torn last line is counted as torn;
// blank lines are ignored; the good records all come back.
func TestReadToleratesBadLines(t *testing.T) {
	sp := newSpool(t)
	good := `{"time":"2026-03-01T10:00:00Z","node":"n1","knob":"thp.enabled","kind":"drift"}`
	content := strings.Join([]string{
		good,
		`not json at all`,
		``,
		`{"time":"2026-03-01T10:00:00Z","node":"n1"}`, // no knob
		`{"node":"n1","knob":"x"}`,                    // no time
		`["an","array"]`,
		`{"knob":"` + strings.Repeat("k", 2<<20) + `","time":"2026-03-01T10:00:00Z"}`, // over MaxLine
		good,
		`{"time":"2026-03-01T10:01:00Z","node":"n1","knob":"thp.en`, // torn
	}, "\n")
	os.WriteFile(filepath.Join(sp.Dir(), FileName), []byte(content), 0o600)
	got, sk, err := Read(sp, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || sk.Garbage != 5 || sk.Torn != 1 {
		t.Fatalf("got %d records, skipped %+v", len(got), sk)
	}
	if !reflect.DeepEqual(sk.Lines, []int{2, 4, 5, 6, 7, 9}) {
		t.Fatalf("skipped lines %v", sk.Lines)
	}
	if s := sk.String(); !strings.Contains(s, "5 unreadable") || !strings.Contains(s, "torn") || !strings.Contains(s, FileName) {
		t.Fatalf("note %q", s)
	}
}

// TestReadKeepsWholeUnterminatedLine: a last record that lost only its "\n"
// is whole and kept.
func TestReadKeepsWholeUnterminatedLine(t *testing.T) {
	sp := newSpool(t)
	os.WriteFile(filepath.Join(sp.Dir(), FileName),
		[]byte(`{"time":"2026-03-01T10:00:00Z","knob":"a"}`+"\n"+`{"time":"2026-03-01T10:00:00Z","knob":"b"}`), 0o600)
	got, sk, err := Read(sp, time.Time{})
	if err != nil || len(got) != 2 || sk.Total() != 0 {
		t.Fatalf("%v %+v %v", got, sk, err)
	}
}

// TestAppendAfterTornWrite: a torn fragment left by an earlier cut-short
// write costs only itself, not the next record.
func TestAppendAfterTornWrite(t *testing.T) {
	sp := newSpool(t)
	os.WriteFile(filepath.Join(sp.Dir(), FileName), []byte(`{"time":"2026-03-01T10:00:00Z","kn`), 0o600)
	if err := Append(sp, []Record{rec(1, "n", "k", "s", "a", "b")}); err != nil {
		t.Fatal(err)
	}
	got, sk, err := Read(sp, time.Time{})
	if err != nil || len(got) != 1 || got[0].Knob != "k" || sk.Garbage != 1 {
		t.Fatalf("%v %+v %v", got, sk, err)
	}
}

func TestReadRefusesSymlinkedFile(t *testing.T) {
	sp := newSpool(t)
	other := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	os.WriteFile(other, []byte(`{"time":"2026-03-01T10:00:00Z","knob":"a"}`+"\n"), 0o600)
	os.Symlink(other, filepath.Join(sp.Dir(), FileName))
	if _, _, err := Read(sp, time.Time{}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err = %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A retried epilog appends the same records again: they are written once.
func TestAppendIdempotent(t *testing.T) {
	sp := newSpool(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	recs := []Record{{Time: at, Node: "n1", Job: "7", User: "a", Knob: "vm_swappiness", Scope: "node", Expected: "10", Found: "60"},
		{Time: at, Node: "n1", Job: "7", User: "a", Knob: "gpu_persistence", Scope: "gpu:GPU-1", Expected: "on", Found: "off"}}
	for i := 0; i < 3; i++ {
		if err := Append(sp, recs); err != nil {
			t.Fatal(err)
		}
	}
	// The same drift of a later run of the job (another time) is new.
	later := recs[0]
	later.Time = at.Add(time.Hour)
	if err := Append(sp, []Record{later, recs[1]}); err != nil {
		t.Fatal(err)
	}
	got, _, err := Read(sp, time.Time{})
	if err != nil || len(got) != 3 {
		t.Fatalf("records %d (want 3): %+v %v", len(got), got, err)
	}
}
