package evfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pruneDir is a records' directory holding, for Prune, the records of jobs
// 1..n (job i's last write i days before now, each about size bytes), and
// files that are not records.
func pruneDir(t *testing.T, n, size int, now time.Time) (*Dir, string) {
	t.Helper()
	state := base(t) + "/state"
	d := open(t, state)
	jobs := state + "/jobs"
	for i := 1; i <= n; i++ {
		r := record(fmt.Sprint(i), 1000, t0.Add(time.Duration(i)*time.Hour))
		r.Warnings = []string{strings.Repeat("x", size)}
		name := write(t, d, r)
		mtime := now.AddDate(0, 0, -i)
		os.Chtimes(filepath.Join(jobs, name), mtime, mtime)
	}
	old := now.AddDate(-1, 0, 0)
	for _, s := range []string{"notes.txt", "1-bad.json", "01-20250304T050607Z.json", "9-20250304T050607Z.json.bak"} {
		plantFile(t, state, s, "not a record")
		os.Chtimes(filepath.Join(jobs, s), old, old)
	}
	os.Symlink("/etc/passwd", jobs+"/99-20200101T000000Z.json")
	plantFile(t, state, ".3-20250304T050607Z.json.tmp-1", "{")
	os.Chtimes(jobs+"/.3-20250304T050607Z.json.tmp-1", old, old)
	plantFile(t, state, ".4-20250304T050607Z.json.tmp-2", "{") // a live writer's: fresh
	return d, jobs
}

// byJob is the record names of jobs ids in pruneDir.
func byJob(ids ...int) []string {
	var out []string
	for _, i := range ids {
		out = append(out, fmt.Sprintf("%d-%s.json", i, t0.Add(time.Duration(i)*time.Hour).Format(StampLayout)))
	}
	return out
}

// Records older than keepDays go (but keep); other files stay, but a dead
// writer's temporary file.
func TestPruneAge(t *testing.T) {
	needRoot(t)
	now := time.Now()
	d, jobs := pruneDir(t, 5, 10, now)
	before := names(t, jobs)
	removed, err := d.Prune(3, 0, now.Add(time.Minute), byJob(5)[0])
	want := append([]string{".3-20250304T050607Z.json.tmp-1"}, byJob(4, 3)...)
	if err != nil || !slices.Equal(removed, want) {
		t.Fatalf("removed %v, %v; want %v", removed, err, want)
	}
	left := names(t, jobs)
	if len(left) != len(before)-3 || !slices.Contains(left, byJob(5)[0]) || !slices.Contains(left, "notes.txt") ||
		!slices.Contains(left, "99-20200101T000000Z.json") || !slices.Contains(left, ".4-20250304T050607Z.json.tmp-2") {
		t.Errorf("left %v", left)
	}
	if removed, err := d.Prune(0, 0, now.AddDate(1, 0, 0), ""); len(removed) != 1 || err != nil {
		t.Errorf("rules off, a year on: removed %v, %v; want the other temporary file only", removed, err)
	}
}

// Past keepMB, the oldest records go first, but keep.
func TestPruneSize(t *testing.T) {
	needRoot(t)
	now := time.Now()
	d, jobs := pruneDir(t, 4, 400<<10, now) // 4 x 400 KiB
	removed, err := d.Prune(0, 1, now, byJob(4)[0])
	want := append([]string{".3-20250304T050607Z.json.tmp-1"}, byJob(3, 2)...)
	if err != nil || !slices.Equal(removed, want) {
		t.Fatalf("removed %v, %v; want %v", removed, err, want)
	}
	if left := names(t, jobs); !slices.Contains(left, byJob(1)[0]) || !slices.Contains(left, byJob(4)[0]) {
		t.Errorf("left %v", left)
	}
	if removed, _ := d.Prune(0, 1, now, ""); len(removed) != 0 {
		t.Errorf("within the bound, removed %v", removed)
	}
	if _, err := d.Prune(1, 1, now.Add(time.Minute), ""); err != nil {
		t.Error(err)
	}
	if recs, errs := d.All(); len(recs) != 0 || len(errs) != 1 { // the symlink
		t.Errorf("after the last prune: %d records, %v", len(recs), errs)
	}
}
