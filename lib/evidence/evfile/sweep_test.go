package evfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A record write killed half-way leaves its temporary file; the next
// writer (under the node lock) removes it, and nothing else: not a live
// writer's, not a record, not another file.
func TestSweepRemovesOnlyDeadWritersTemps(t *testing.T) {
	needRoot(t)
	state := filepath.Join(base(t), "spool")
	d := open(t, state)
	name := write(t, d, record("7", 1000, t0))
	dead := fmt.Sprintf(".%s.tmp-%d", name, 1<<22+12345) // above pid_max's default: no such process
	live := fmt.Sprintf(".%s.tmp-%d", name, os.Getppid())
	for _, n := range []string{dead, live, "notes.txt"} {
		plantFile(t, state, n, "half")
	}
	removed, err := d.Sweep()
	if err != nil || !slices.Equal(removed, []string{dead}) {
		t.Fatalf("Sweep: %v %v, want only %s", removed, err, dead)
	}
	left := names(t, filepath.Join(state, Sub))
	for _, n := range []string{name, live, "notes.txt"} {
		if !slices.Contains(left, n) {
			t.Errorf("Sweep removed %s; left %v", n, left)
		}
	}
}
