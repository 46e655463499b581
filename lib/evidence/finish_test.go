package evidence

import (
	"testing"

	"gpuprep/lib/gpu"
)

func TestSoFarAndFinish(t *testing.T) {
	r := Record{Format: Format, Running: true, Job: Job{ID: "42", User: "alice", Node: "gpu01", Start: t0},
		Start: snap(0, card(0, values(1e9, nil)))}
	half := card(0, values(1e9, map[gpu.Counter]uint64{gpu.EnergyMJ: 1e9 + 900e6, gpu.PowerCapNs: 1e9 + 612e9}))
	now := SoFar(r, snap(hour/2, half))
	if !now.Running || now.End == nil || now.End.Time != t0.Add(hour/2*1e9) {
		t.Fatalf("so far: running %v, end %v", now.Running, now.End)
	}
	if now.Total == nil || *now.Total.EnergyJ != 900e3 || !near(now.GPUs[0].Throttle[gpu.PowerCapNs].Share, 0.34) {
		t.Fatalf("figures so far: %+v", now.Total)
	}
	if r.End != nil || r.GPUs != nil || r.Total != nil {
		t.Fatal("SoFar changed its record")
	}
	contains(t, report(t, now), "end:       running, so far (2026-03-01 10:30:00Z)", "duration:  30m0s so far", "34%")
	contains(t, report(t, r), "running (no figures yet)", "GPUs: no figures yet")

	r.Finish(snap(hour, busy(0)))
	if r.Running || r.End == nil || *r.Total.EnergyJ != 1800e3 || r.Total.Seconds != hour {
		t.Fatalf("finished: %+v %+v", r, r.Total)
	}
}
