package evidence

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gpuprep/lib/gpu"
)

func TestWriteReportPowerCapped(t *testing.T) {
	r := record("42", "gpu01", 1)
	r.Settings = []Setting{{Knob: "gpu_power_limit_mw@GPU-0000", Value: "500000"}}
	r.Xids = []string{"Xid 79 on GPU 0\x1b[31m"}
	r.Warnings = []string{"gpu_clocks kept at job 41's value"}
	r.Processes = []Process{{PID: 4242, GPU: uuid(0), Seconds: 3500, GPUUtilPct: 97, MemoryUtilPct: 60, MaxMemoryBytes: 70 << 30}}
	out := report(t, r)
	contains(t, out,
		"Job 42 of alice on gpu01", "profile:   train", "start:     2026-03-01 10:00:00Z", "end:       2026-03-01 11:00:00Z",
		"duration:  1h0m0s", "gpu_power_limit_mw@GPU-0000  500000", "Drift: nothing drifted",
		"1800000 J (0.500 kWh)", "500 W", "34%",
		"GPU 0: the GPU was at its power limit 34% of the time: the job was power-bound; a profile with a higher power limit",
		"4242  0    3500     97%       60%          70.0 GiB", "gpu_clocks kept at job 41's value")
	if strings.Contains(out, "\x1b") {
		t.Error("an escape character reached the terminal")
	}
	if strings.Contains(out, "heat") || strings.Contains(out, "Nothing to act on") {
		t.Error("advice for a reason below the threshold, or none for one above it")
	}
}

func TestWriteReportAdvice(t *testing.T) {
	r := record("42", "gpu01", 2)
	r.Drift = []string{"cpu.governor on 0-31: performance -> powersave"}
	g := &r.GPUs[1]
	g.Throttle[gpu.HWThermalNs] = Throttle{Seconds: 360, Share: 0.10}
	g.Throttle[gpu.PowerBrakeNs] = Throttle{Seconds: 18, Share: 0.005} // below ActShare
	g.Throttle[gpu.SyncBoostNs] = Throttle{Seconds: 72, Share: 0.02}
	g.Errors[gpu.ECCUncorrected] = 2
	g.Throttle[gpu.PowerCapNs] = Throttle{Seconds: 1080, Share: 0.30}
	r.Total = sumTotal(r.GPUs, hour)
	out := report(t, r)
	contains(t, out, "What drifted under the job (1):", "cpu.governor on 0-31",
		"GPUs 0,1: each GPU was at its power limit 30%-34% of the time",
		"GPU 1: the GPU was held down by heat 10% of the time (hardware thermal slowdown): tell your admins (cooling)",
		"GPU 1: the GPU was held to the slowest GPU of its sync-boost group 2% of the time",
		"GPU 1 (+2): uncorrected ECC errors: the job's results may be wrong; tell your admins",
		"uncorrected ECC +2", "32%") // the total's power cap: (1224+1080)/7200
	if strings.Contains(out, "power brake (an external") {
		t.Error("power brake advice below ActShare")
	}
	quiet := record("43", "gpu01", 1)
	quiet.GPUs[0].Throttle[gpu.PowerCapNs] = Throttle{Seconds: 1, Share: 0.0003}
	quiet.Total = sumTotal(quiet.GPUs, hour)
	contains(t, report(t, quiet), "<1%", "Nothing to act on")
}

func TestWriteReportJSON(t *testing.T) {
	r := record("42", "gpu01", 1)
	var b bytes.Buffer
	if err := WriteReportJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Job.ID != "42" || back.Total == nil || *back.Total.EnergyJ != 1800e3 ||
		back.GPUs[0].Throttle[gpu.PowerCapNs].Seconds != 1224 || !strings.Contains(b.String(), "\n  \"job\": {") {
		t.Fatalf("round trip:\n%s", b.String())
	}
}
