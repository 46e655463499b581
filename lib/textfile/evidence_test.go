package textfile

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/evidence"
	"gpuprep/lib/gpu"
	"gpuprep/lib/metrics"
)

func joules(j float64) *float64 { return &j }

// throttles are seconds by counter, each with its share of secs.
func throttles(secs float64, s map[gpu.Counter]float64) map[gpu.Counter]evidence.Throttle {
	out := map[gpu.Counter]evidence.Throttle{}
	for c, v := range s {
		out[c] = evidence.Throttle{Seconds: v, Share: v / secs}
	}
	return out
}

// testRecord is a finished job's evidence on four GPUs: GPU 4 its own;
// GPU 5 shared (MPS); GPU 6 unreadable; GPU 7 its own after a driver
// reload reset its energy, its power brake counter missing (yet listed
// in Throttle, as a careless writer might).
func testRecord() evidence.Record {
	all := func(sw float64) map[gpu.Counter]float64 {
		return map[gpu.Counter]float64{gpu.PowerCapNs: 120, gpu.SWThermalNs: sw, gpu.HWThermalNs: 60, gpu.PowerBrakeNs: 0, gpu.SyncBoostNs: 0}
	}
	return evidence.Record{
		Format: evidence.Format,
		Job:    evidence.Job{ID: "1001", User: "alice", Node: "gpu01", Start: t0},
		End:    &evidence.Snapshot{Time: t0.Add(2 * 3600e9)},
		Shared: map[string][]string{"GPU-b": {"MPS"}},
		GPUs: []evidence.GPUResult{
			{UUID: "GPU-a", BusID: "0000:18:00.0", Index: 4, Attributable: true, Seconds: 7200, EnergyJ: joules(3.6e6), Throttle: throttles(7200, all(1800))},
			{UUID: "GPU-b", BusID: "0000:2a:00.0", Index: 5, SharedWhy: []string{"MPS"}, Seconds: 7200, EnergyJ: joules(4e6), Throttle: throttles(7200, all(7000))},
			{UUID: "GPU-c", BusID: "0000:3b:00.0", Index: 6, Attributable: true, Error: "counters unreadable at the epilog: GPU is lost"},
			{UUID: "GPU-d", BusID: "0000:db:00.0", Index: 7, Attributable: true, Seconds: 7199.5, EnergyJ: joules(1),
				Throttle: throttles(7199.5, all(10)), Missing: []gpu.Counter{gpu.PowerBrakeNs}, Reset: []gpu.Counter{gpu.EnergyMJ}},
		},
	}
}

// TestAddEvidence: the job's own GPUs are counted, with dcgm-exporter's
// labels; shared and unreadable ones are not; unknown counters add
// nothing; a running record is not counted.
func TestAddEvidence(t *testing.T) {
	var m metrics.Metrics
	r := testRecord()
	AddEvidence(&m, r, EvidenceLabels(r))
	a := metrics.GPULabels{GPU: "4", UUID: "GPU-a", BusID: "00000000:18:00.0"}
	d := metrics.GPULabels{GPU: "7", UUID: "GPU-d", BusID: "00000000:DB:00.0"}
	want := map[string]metrics.JobGPU{
		"GPU-a": {GPULabels: a, Jobs: 1, Seconds: 7200, EnergyJoules: 3.6e6,
			Throttle: map[string]float64{"power_cap": 120, "sw_thermal": 1800, "hw_thermal": 60, "power_brake": 0, "sync_boost": 0}},
		"GPU-d": {GPULabels: d, Jobs: 1, Seconds: 7199.5, EnergyUnknownJobs: 1,
			Throttle: map[string]float64{"power_cap": 120, "sw_thermal": 10, "hw_thermal": 60, "sync_boost": 0}},
	}
	if !reflect.DeepEqual(m.JobGPUs, want) {
		t.Fatalf("got  %+v\nwant %+v", m.JobGPUs, want)
	}
	if g := r.GPUs[3]; !g.Attributable || len(r.Shared[g.UUID]) > 0 {
		t.Fatal("test record: GPU-d must be attributable and not shared here")
	}

	// The same job's record while it ran, or without the epilog's
	// snapshot, counts nothing; a second job adds up.
	running := testRecord()
	running.Running, running.End = true, nil
	AddEvidence(&m, running, EvidenceLabels(running))
	noEnd := testRecord()
	noEnd.End = nil
	AddEvidence(&m, noEnd, EvidenceLabels(noEnd))
	if !reflect.DeepEqual(m.JobGPUs, want) {
		t.Fatalf("unfinished records were counted: %+v", m.JobGPUs)
	}
	AddEvidence(&m, r, EvidenceLabels(r))
	if g := m.JobGPUs["GPU-a"]; g.Jobs != 2 || g.Seconds != 14400 || g.EnergyJoules != 7.2e6 || g.Throttle["sw_thermal"] != 3600 {
		t.Errorf("second job: %+v", g)
	}
}

// TestAddEvidenceSharedListed: a GPU the record lists in Shared is not
// counted even when its result says attributable; one labels cannot name
// is not counted either.
func TestAddEvidenceSharedListed(t *testing.T) {
	r := testRecord()
	r.Shared["GPU-d"] = []string{"shared with job 1002"}
	var m metrics.Metrics
	AddEvidence(&m, r, EvidenceLabels(r))
	if _, ok := m.JobGPUs["GPU-d"]; ok || len(m.JobGPUs) != 1 {
		t.Errorf("shared GPU counted: %+v", m.JobGPUs)
	}
	m = metrics.Metrics{}
	AddEvidence(&m, r, func(string) metrics.GPULabels { return metrics.GPULabels{} })
	if len(m.JobGPUs) != 0 {
		t.Errorf("unlabelled GPUs counted: %+v", m.JobGPUs)
	}
}

// TestEvidenceLabels: labels as GPULabeller's (so the series join with
// dcgm-exporter's), from the record's own GPUs.
func TestEvidenceLabels(t *testing.T) {
	labels := EvidenceLabels(testRecord())
	for bus, want := range map[string]metrics.GPULabels{
		"0000:18:00.0": {GPU: "4", UUID: "GPU-a", BusID: "00000000:18:00.0"},
		"0000:db:00.0": {GPU: "7", UUID: "GPU-d", BusID: "00000000:DB:00.0"},
		"0000:99:00.0": {BusID: "00000000:99:00.0"}, // not the record's
		"":             {},
	} {
		if got := labels(bus); got != want {
			t.Errorf("%q: %+v, want %+v", bus, got, want)
		}
	}
}

// The metrics' reasons are lib/gpu's clock-event counters, in order.
func TestThrottleReasons(t *testing.T) {
	var want []string
	for _, c := range gpu.ThrottleCounters {
		if !strings.HasSuffix(string(c), "_ns") {
			t.Errorf("%s: no _ns suffix", c)
		}
		want = append(want, ThrottleReason(c))
	}
	if !slices.Equal(metrics.ThrottleReasons, want) {
		t.Errorf("metrics.ThrottleReasons %v, lib/gpu's %v", metrics.ThrottleReasons, want)
	}
}
