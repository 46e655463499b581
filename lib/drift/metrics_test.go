package drift

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMetricsSurviveRestarts(t *testing.T) {
	sp := newSpool(t)
	m, err := LoadMetrics(sp)
	if err != nil || m.DriftEvents != nil || m.Runs != nil {
		t.Fatalf("fresh: %+v %v", m, err)
	}
	recs := history()
	if err := Append(sp, recs); err != nil {
		t.Fatal(err)
	}
	m.AddDrift(recs)
	m.SetRun(HookEpilog, t0, 20*time.Millisecond, true)
	if err := SaveMetrics(sp, m); err != nil {
		t.Fatal(err)
	}
	// Another process (the prolog) loads, adds its run, saves: the epilog's
	// figures and the counts are kept.
	m2, err := LoadMetrics(sp)
	if err != nil || !reflect.DeepEqual(m2, m) {
		t.Fatalf("reload:\n got %+v\nwant %+v (%v)", m2, m, err)
	}
	m2.SetRun(HookProlog, t0.Add(time.Minute), 5*time.Millisecond, false)
	SaveMetrics(sp, m2)
	m3, _ := LoadMetrics(sp)
	if len(m3.Runs) != 2 || m3.DriftEvents["cpu.governor"] != 3 || m3.InvariantEvents["gpu.persistence"] != 1 {
		t.Fatalf("after prolog: %+v", m3)
	}
}

// TestMetricsRebuiltFromHistory: with metrics.json lost or corrupt, the
// counters come back from the drift file, not from zero.
func TestMetricsRebuiltFromHistory(t *testing.T) {
	sp := newSpool(t)
	Append(sp, history())
	m, err := LoadMetrics(sp) // no metrics.json yet
	if err != nil || m.DriftEvents["cpu.governor"] != 3 || m.InvariantEvents["gpu.persistence"] != 1 {
		t.Fatalf("rebuilt %+v %v", m, err)
	}
	os.WriteFile(filepath.Join(sp.Dir(), MetricsFile), []byte("{garbage"), 0o600)
	m, err = LoadMetrics(sp)
	if err == nil || !strings.Contains(err.Error(), MetricsFile) || m.DriftEvents["cpu.governor"] != 3 {
		t.Fatalf("corrupt file: %+v %v", m, err)
	}
	if err := SaveMetrics(sp, m); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMetrics(sp); err != nil {
		t.Fatalf("not repaired: %v", err)
	}
}
