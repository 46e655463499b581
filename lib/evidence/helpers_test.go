package evidence

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/gpu"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const hour = 3600

// values are a GPU's counters: every counter of gpu.AllCounters at base
// (the errors at 0), then set.
func values(base uint64, set map[gpu.Counter]uint64) map[gpu.Counter]uint64 {
	v := map[gpu.Counter]uint64{}
	for _, c := range gpu.AllCounters {
		v[c] = base
	}
	for _, c := range gpu.ErrorCounters {
		v[c] = 0
	}
	maps.Copy(v, set)
	return v
}

// card is GPU i's snapshot with counters v.
func card(i int, v map[gpu.Counter]uint64) GPUSnapshot {
	return GPUSnapshot{UUID: uuid(i), BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10), Index: i,
		Name: "NVIDIA H100 80GB HBM3", Counters: &gpu.Counters{Values: v}}
}

// uuid is GPU i's UUID.
func uuid(i int) string { return fmt.Sprintf("GPU-%04d", i) }

// snap is a snapshot sec seconds after t0 on driver 550.54.15, boot b1.
func snap(sec int, gpus ...GPUSnapshot) Snapshot {
	return Snapshot{Time: t0.Add(time.Duration(sec) * time.Second), BootID: "b1", Driver: "550.54.15", GPUs: gpus}
}

// busy is GPU i's counters after an hour at 500 W held at its power limit
// 34% of the time, from values(1e9, nil).
func busy(i int) GPUSnapshot {
	return card(i, values(1e9, map[gpu.Counter]uint64{
		gpu.EnergyMJ:   1e9 + 1800e6, // 1800 kJ in an hour: 500 W
		gpu.PowerCapNs: 1e9 + 1224e9, // 34% of 3600 s
	}))
}

// record is job id's record on node, started at t0 with GPUs 0..n-1 and
// finished an hour later with each GPU busy.
func record(id, node string, n int) Record {
	var start, end []GPUSnapshot
	for i := range n {
		start = append(start, card(i, values(1e9, nil)))
		end = append(end, busy(i))
	}
	r := Record{Format: Format, Running: true, Start: snap(0, start...),
		Job: Job{ID: id, User: "alice", UID: 1000, Node: node, Profile: "train", Start: t0}}
	r.Finish(snap(hour, end...))
	return r
}

// report is WriteReport's text of r.
func report(t *testing.T, r Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	return b.String()
}

// contains fails t for each of want that text lacks.
func contains(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q", w)
		}
	}
}

// near says whether a is b within a millionth.
func near(a, b float64) bool {
	d := a - b
	return d < 1e-6 && d > -1e-6
}
