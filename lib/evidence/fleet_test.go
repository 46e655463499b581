package evidence

import (
	"bytes"
	"strings"
	"testing"

	"gpuprep/lib/gpu"
)

// hot is job id's record on node with GPU 0 held down by heat for share of
// the hour (and at its power limit 34%).
func hot(id, node string, share float64) Record {
	r := record(id, node, 1)
	r.GPUs[0].Throttle[gpu.HWThermalNs] = Throttle{Seconds: share * hour, Share: share}
	return r
}

func TestFleetThrottlingNodeFirst(t *testing.T) {
	shared := hot("9", "gpu01", 0.9)
	shared.GPUs[0].Attributable, shared.GPUs[0].SharedWhy = false, []string{"MPS"}
	shared.GPUs[0].Errors[gpu.PCIeReplays] = 4
	running := hot("10", "gpu01", 0.9)
	running.Running = true
	gs := Fleet([]Record{
		hot("1", "gpu01", 0.40), hot("2", "gpu02", 0.60), hot("3", "gpu02", 0.80), hot("4", "gpu03", 0.10),
		shared, running,
	})
	if len(gs) != 3 || gs[0].Node != "gpu02" || gs[1].Node != "gpu01" || gs[2].Node != "gpu03" {
		t.Fatalf("order: %+v", gs)
	}
	if g := gs[0]; g.Jobs != 2 || g.GPUSeconds != 2*hour || !near(g.Throttle[gpu.HWThermalNs], 0.70) ||
		!near(g.Throttle[gpu.PowerCapNs], 0.34) || g.EnergyPerGPUHourKWh == nil || !near(*g.EnergyPerGPUHourKWh, 0.5) {
		t.Errorf("gpu02: %+v", g)
	}
	if g := gs[1]; g.Jobs != 1 || g.SharedJobs != 1 || !near(g.Throttle[gpu.HWThermalNs], 0.40) || g.ErrorsGrew[gpu.PCIeReplays] != 4 {
		t.Errorf("gpu01, a shared job's shares left out, its errors kept: %+v", g)
	}
	var b bytes.Buffer
	if err := WriteFleet(&b, gs, 2); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	contains(t, out, "3 GPUs on 3 nodes, the 2 most throttled first", "70%", "PCIe replays +4")
	if strings.Contains(out, "gpu03") || strings.Index(out, "gpu02") > strings.Index(out, "gpu01") {
		t.Error("top not kept, or not the most throttled first")
	}
}
