package probefleet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/probe"
)

// A file that is not a verdict is an error of one line naming it, and
// every other file is still read; names come from the verdict, else the
// file; of two verdicts of a node the newer is kept, with a note.
func TestReadErrorsAndNames(t *testing.T) {
	dir := t.TempDir()
	fleet := h100Fleet(4, 1)
	writeJSON(t, filepath.Join(dir, "a.json"), fleet[0]) // gpu001
	fleet[1].Node = ""
	writeJSON(t, filepath.Join(dir, "rack1", "gpu017", probe.VerdictFile), fleet[1])
	fleet[2].Node = ""
	writeJSON(t, filepath.Join(dir, "rack1", "gpu018.json"), fleet[2])
	older := fleet[0]
	older.Time = t0.Add(-time.Hour)
	writeJSON(t, filepath.Join(dir, "rack2", "old-gpu001.json"), older)
	newer := fleet[3]
	newer.Node, newer.Time = "gpu004", t0.Add(time.Hour)
	writeJSON(t, filepath.Join(dir, "rack2", "z-gpu004.json"), fleet[3])
	writeJSON(t, filepath.Join(dir, "rack3", "gpu004.json"), newer)
	writeFile(t, filepath.Join(dir, "bad.json"), "{\"node\": \"x\",\n not json")
	writeFile(t, filepath.Join(dir, "empty.json"), "{}")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a verdict, not read")
	writeFile(t, filepath.Join(dir, ".partial", "x.json"), "not read")
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, "")
	if err := os.Truncate(big, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	nodes, errs := Read([]string{dir, filepath.Join(dir, "a.json"), missing})

	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"gpu001", "gpu004", "gpu017", "gpu018"}) {
		t.Errorf("nodes %v", names)
	}
	if nodes[0].Path != filepath.Join(dir, "a.json") || !nodes[1].Verdict.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("kept %s and gpu004 of %s: want the newer verdicts", nodes[0].Path, nodes[1].Verdict.Time)
	}
	want := []struct {
		file   string
		target error
	}{
		{"bad.json", nil}, {"big.json", ErrTooLarge}, {"empty.json", ErrNotVerdict},
		{"old-gpu001.json", ErrDuplicate}, {"gpu004.json", ErrDuplicate}, {"missing.json", fs.ErrNotExist},
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %q, want %d", errs, len(want))
	}
	for i, w := range want {
		msg := errs[i].Error()
		if !strings.Contains(msg, w.file) || strings.Contains(msg, "\n") || (w.target != nil && !errors.Is(errs[i], w.target)) {
			t.Errorf("error %d: %q, want one line naming %s (%v)", i, msg, w.file, w.target)
		}
	}
	if msg := errs[0].Error(); !strings.Contains(msg, "not JSON at byte") {
		t.Errorf("bad JSON: %q", msg)
	}
	if msg := errs[4].Error(); !strings.Contains(msg, "keeping "+filepath.Join(dir, "rack3", "gpu004.json")) {
		t.Errorf("duplicate note %q", msg)
	}
}

// A directory with no *.json file is an error; an explicit file is read
// whatever its name.
func TestReadPaths(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "none", "readme"), "x")
	writeJSON(t, filepath.Join(dir, "gpu009.verdict"), h100Fleet(1, 1)[0])
	nodes, errs := Read([]string{filepath.Join(dir, "none"), filepath.Join(dir, "gpu009.verdict")})
	if len(nodes) != 1 || nodes[0].Name != "gpu001" {
		t.Errorf("nodes %+v", nodes)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrNoFiles) {
		t.Errorf("errors %v", errs)
	}
}
