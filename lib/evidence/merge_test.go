package evidence

import (
	"bytes"
	"strings"
	"testing"
)

func TestMergeSumsNodes(t *testing.T) {
	a, b := record("42", "gpu02", 2), record("42", "gpu01", 1)
	running := b
	running.Running = true
	v, err := Merge([]Record{a, b, running})
	if err != nil {
		t.Fatal(err)
	}
	if v.Job != "42" || len(v.Parts) != 2 || v.Parts[0].Job.Node != "gpu01" || v.Parts[0].Running {
		t.Fatalf("parts: %+v", v.Parts)
	}
	if v.Total.GPUs != 3 || v.Total.EnergyJ == nil || *v.Total.EnergyJ != 3*1800e3 || !near(*v.Total.EnergyKWh, 1.5) ||
		v.Total.GPUSeconds != 3*hour || v.Total.Seconds != hour {
		t.Fatalf("total %+v", v.Total)
	}
	var buf bytes.Buffer
	if err := WriteJobView(&buf, v); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	contains(t, out, "Job 42 of alice on 2 nodes (gpu[01-02])", "gpu01  1", "gpu02  2", "5400000 J (1.500 kWh)",
		"gpu02 GPUs 0,1: each GPU was at its power limit 34% of the time")
}

func TestMergeRunningPartAndErrors(t *testing.T) {
	a := record("42", "gpu01", 1)
	b := Record{Job: Job{ID: "42", User: "alice", Node: "gpu02", Start: t0}, Running: true, Start: snap(0)}
	v, err := Merge([]Record{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if v.Total.EnergyJ != nil || !strings.Contains(strings.Join(v.Total.Unknown, "\n"), "gpu02: no end snapshot") {
		t.Errorf("a part with no figures: total %+v", v.Total)
	}
	if _, err := Merge([]Record{a, record("43", "gpu02", 1), record("41", "gpu03", 1)}); err == nil ||
		!strings.Contains(err.Error(), "41, 42, 43") {
		t.Errorf("several jobs: %v", err)
	}
	if _, err := Merge(nil); err == nil {
		t.Error("no records merged")
	}
	var one, direct bytes.Buffer
	v, _ = Merge([]Record{a})
	WriteJobView(&one, v)
	WriteReport(&direct, a)
	if one.String() != direct.String() {
		t.Error("one node's view is not its report")
	}
}
