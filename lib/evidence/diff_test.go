package evidence

import (
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/gpu"
)

func TestDiffPowerCapped(t *testing.T) {
	gs, tot := Diff(snap(0, card(0, values(1e9, nil))), snap(hour, busy(0)), nil)
	if len(gs) != 1 {
		t.Fatalf("%d results", len(gs))
	}
	g := gs[0]
	if g.Error != "" || !g.Attributable || g.Seconds != hour {
		t.Fatalf("result %+v", g)
	}
	if g.EnergyJ == nil || *g.EnergyJ != 1800e3 || g.MeanPowerW == nil || *g.MeanPowerW != 500 {
		t.Errorf("energy %v J, power %v W", g.EnergyJ, g.MeanPowerW)
	}
	if th := g.Throttle[gpu.PowerCapNs]; th.Seconds != 1224 || !near(th.Share, 0.34) {
		t.Errorf("power cap %+v, want 1224 s, 34%%", th)
	}
	if th, ok := g.Throttle[gpu.SWThermalNs]; !ok || th.Seconds != 0 {
		t.Errorf("sw thermal %+v %v: known zero wanted", th, ok)
	}
	if len(g.Errors) != len(gpu.ErrorCounters) || len(g.Missing) != 0 || len(g.Reset) != 0 {
		t.Errorf("errors %v, missing %v, reset %v: every error counter known, zero", g.Errors, g.Missing, g.Reset)
	}
	if tot.GPUs != 1 || tot.EnergyKWh == nil || !near(*tot.EnergyKWh, 0.5) || !near(tot.Throttle[gpu.PowerCapNs].Share, 0.34) {
		t.Errorf("total %+v", tot)
	}
}

func TestDiffMissingEnergyIsUnknown(t *testing.T) {
	end := busy(0)
	delete(end.Counters.Values, gpu.EnergyMJ)
	end.Counters.Missing = []gpu.Counter{gpu.EnergyMJ}
	gs, tot := Diff(snap(0, card(0, values(1e9, nil)), card(1, values(1e9, nil))), snap(hour, end, busy(1)), nil)
	g := gs[0]
	if g.EnergyJ != nil || g.MeanPowerW != nil || !slices.Contains(g.Missing, gpu.EnergyMJ) {
		t.Fatalf("energy %v, power %v, missing %v: want unknown and named", g.EnergyJ, g.MeanPowerW, g.Missing)
	}
	if tot.EnergyJ != nil || tot.EnergyKWh != nil || tot.MeanPowerW != nil {
		t.Fatalf("total energy %v kWh %v power %v: one GPU's unknown makes it unknown", tot.EnergyJ, tot.EnergyKWh, tot.MeanPowerW)
	}
	if len(tot.Unknown) != 1 || tot.Unknown[0] != "energy on GPU-0000: missing" {
		t.Errorf("unknown %q", tot.Unknown)
	}
	out := report(t, Record{Job: Job{ID: "7", User: "bob", Node: "gpu01"}, Start: snap(0), End: &Snapshot{Time: t0.Add(hour * 1e9)},
		GPUs: gs, Total: tot})
	contains(t, out, "unknown (missing)", "unknown (see below)", "missing (the GPU or its driver does not count them): energy",
		"total: unknown energy on GPU-0000: missing")
	row := lineWith(out, "0000:18:00.0")
	if strings.Contains(row, " 0 J") || strings.Contains(row, " 0 W") {
		t.Errorf("an unknown energy reads as zero: %q", row)
	}
}

func TestDiffDriverReload(t *testing.T) {
	start := card(0, values(1e9, map[gpu.Counter]uint64{gpu.RemappedUncorrect: 2}))
	for _, c := range []struct {
		name, want string
		end        GPUSnapshot
		driver     string
		boot       string
	}{
		{"new driver", "driver 550.54.15 -> 560.35.03", busy(0), "560.35.03", "b1"},
		{"reboot", "node rebooted (boot id changed)", busy(0), "550.54.15", "b2"},
		{"energy backwards", "energy counter went backwards", card(0, values(5e8, nil)), "550.54.15", "b1"},
		{"energy jumped", "energy counter jumped", card(0, values(1e9, map[gpu.Counter]uint64{gpu.EnergyMJ: 1e9 + 20e9*hour})), "550.54.15", "b1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.end.Counters.Values[gpu.RemappedUncorrect] = 3
			end := snap(hour, c.end)
			end.Driver, end.BootID = c.driver, c.boot
			gs, tot := Diff(snap(0, start), end, nil)
			g := gs[0]
			if !strings.HasPrefix(g.DriverReloaded, c.want) {
				t.Fatalf("driver reloaded %q, want %q", g.DriverReloaded, c.want)
			}
			if g.EnergyJ != nil || g.MeanPowerW != nil || len(g.Throttle) != 0 {
				t.Errorf("figures kept over a reload: %v %v %v", g.EnergyJ, g.MeanPowerW, g.Throttle)
			}
			for _, r := range []gpu.Counter{gpu.EnergyMJ, gpu.PowerCapNs, gpu.ECCUncorrected, gpu.PCIeReplays} {
				if !slices.Contains(g.Reset, r) {
					t.Errorf("%s not reset: %v", r, g.Reset)
				}
			}
			if n, ok := g.Errors[gpu.RemappedUncorrect]; !ok || n != 1 || slices.Contains(g.Reset, gpu.RemappedUncorrect) {
				t.Errorf("remapped rows (the GPU keeps them): %d %v, want +1", n, ok)
			}
			if len(g.Errors) != 2 || tot.EnergyJ != nil || !strings.Contains(strings.Join(tot.Unknown, "\n"), "reset: "+c.want) {
				t.Errorf("errors %v, total %+v", g.Errors, tot)
			}
		})
	}
}

func TestDiffCounterBackwards(t *testing.T) {
	end := busy(0)
	end.Counters.Values[gpu.SyncBoostNs] = 5 // below the start's 1e9, energy forwards
	end.Counters.Values[gpu.PCIeReplays] = 0
	start := card(0, values(1e9, map[gpu.Counter]uint64{gpu.PCIeReplays: 9}))
	gs, tot := Diff(snap(0, start), snap(hour, end), nil)
	g := gs[0]
	if g.DriverReloaded != "" || g.EnergyJ == nil {
		t.Fatalf("one counter backwards is no reload: %q %v", g.DriverReloaded, g.EnergyJ)
	}
	if !slices.Equal(g.Reset, []gpu.Counter{gpu.SyncBoostNs, gpu.PCIeReplays}) {
		t.Errorf("reset %v", g.Reset)
	}
	if _, ok := g.Throttle[gpu.SyncBoostNs]; ok {
		t.Error("a counter gone backwards has a figure")
	}
	if _, ok := tot.Throttle[gpu.SyncBoostNs]; ok || tot.Throttle[gpu.PowerCapNs].Seconds != 1224 {
		t.Errorf("total throttle %v", tot.Throttle)
	}
	if !slices.Contains(tot.Unknown, "sync boost, PCIe replays on GPU-0000: went backwards") {
		t.Errorf("unknown %q", tot.Unknown)
	}
}

func TestDiffSharedAndOneEnd(t *testing.T) {
	shared := map[string][]string{uuid(0): {"MPS", "shared with job 123"}}
	gs, tot := Diff(snap(0, card(0, values(1e9, nil)), card(1, values(1e9, nil))), snap(hour, busy(0), busy(2)), shared)
	if len(gs) != 3 || gs[0].Attributable || !slices.Equal(gs[0].SharedWhy, shared[uuid(0)]) || !gs[1].Attributable {
		t.Fatalf("attribution: %+v", gs)
	}
	if gs[1].Error != "at the start only: not in the end snapshot" || gs[2].Error != "at the end only: not in the start snapshot" {
		t.Errorf("errors %q, %q", gs[1].Error, gs[2].Error)
	}
	if gs[1].EnergyJ != nil || tot.EnergyJ != nil || tot.GPUs != 3 || tot.GPUSeconds != 3*hour {
		t.Errorf("total %+v", tot)
	}
	out := report(t, Record{Job: Job{ID: "7"}, Start: snap(0), End: &Snapshot{Time: t0.Add(hour * 1e9)}, GPUs: gs, Total: tot})
	contains(t, out, "GPU 0: not attributable to the job: MPS; shared with job 123",
		"GPU 1: no figures: at the start only", "unknown (error)")
}

func TestDiffUnreadableCapsAndNoTime(t *testing.T) {
	bad := GPUSnapshot{UUID: uuid(1), Index: 1, Error: "NVML: GPU is lost"}
	over := card(0, values(0, map[gpu.Counter]uint64{gpu.HWThermalNs: 2 * hour * 1e9}))
	gs, _ := Diff(snap(0, card(0, values(0, nil)), card(1, values(0, nil))), snap(hour, over, bad), nil)
	if th := gs[0].Throttle[gpu.HWThermalNs]; th.Share != 1 || th.Seconds != 2*hour {
		t.Errorf("share not capped at 1: %+v", th)
	}
	if gs[1].Error != "counters unreadable at the end: NVML: GPU is lost" {
		t.Errorf("error %q", gs[1].Error)
	}
	gs, tot := Diff(snap(0, card(0, values(0, nil))), snap(0, busy(0)), nil)
	if gs[0].EnergyJ == nil || gs[0].MeanPowerW != nil || tot.MeanPowerW != nil {
		t.Errorf("no time: energy %v, power %v (want known, unknown)", gs[0].EnergyJ, gs[0].MeanPowerW)
	}
}

// lineWith is the first line of text holding s.
func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
