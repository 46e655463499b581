package metrics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/drift"
)

func TestMetricsSurviveRestarts(t *testing.T) {
	sp := newSpool(t)
	m, _, err := Load(sp, HookEpilog)
	if err != nil || m.DriftEvents != nil || m.Runs != nil {
		t.Fatalf("fresh: %+v %v", m, err)
	}
	recs := history()
	if err := drift.Append(sp, recs); err != nil {
		t.Fatal(err)
	}
	m.AddDrift(recs)
	m.SetRun(HookEpilog, t0, 20*time.Millisecond, true)
	if err := Save(sp, HookEpilog, m); err != nil {
		t.Fatal(err)
	}
	// The next epilog loads them back whole.
	m2, _, err := Load(sp, HookEpilog)
	if err != nil || !reflect.DeepEqual(m2, m) {
		t.Fatalf("reload:\n got %+v\nwant %+v (%v)", m2, m, err)
	}
	// The prolog keeps its own: it starts from zero and never touches
	// the epilog's.
	p, _, err := Load(sp, HookProlog)
	if err != nil || p.DriftEvents != nil || p.Runs != nil {
		t.Fatalf("prolog's: %+v %v", p, err)
	}
	p.SetRun(HookProlog, t0.Add(time.Minute), 5*time.Millisecond, false)
	Save(sp, HookProlog, p)
	m3, _, _ := Load(sp, HookEpilog)
	if len(m3.Runs) != 1 || m3.DriftEvents["cpu.governor"] != 3 || m3.InvariantEvents["gpu.persistence"] != 1 {
		t.Fatalf("after prolog: %+v", m3)
	}
}

// TestMetricsRebuiltFromHistory: with metrics.json lost or corrupt, the
// counters come back from the drift file, not from zero.
func TestMetricsRebuiltFromHistory(t *testing.T) {
	sp := newSpool(t)
	drift.Append(sp, history())
	m, _, err := Load(sp, HookEpilog) // no metrics.json yet
	if err != nil || m.DriftEvents["cpu.governor"] != 3 || m.InvariantEvents["gpu.persistence"] != 1 {
		t.Fatalf("rebuilt %+v %v", m, err)
	}
	os.WriteFile(filepath.Join(sp.Dir(), StateFile(HookEpilog)), []byte("{garbage"), 0o600)
	m, _, err = Load(sp, HookEpilog)
	if err == nil || !strings.Contains(err.Error(), StateFile(HookEpilog)) || m.DriftEvents["cpu.governor"] != 3 {
		t.Fatalf("corrupt file: %+v %v", m, err)
	}
	if err := Save(sp, HookEpilog, m); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(sp, HookEpilog); err != nil {
		t.Fatalf("not repaired: %v", err)
	}
}
