package health

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/slurm"
)

func xidHealth() config.HealthSection {
	h := config.Default().Health
	h.XIDFatal, h.XIDWarn, h.XIDOther = []int{48, 79, 94}, []int{13}, config.HealthWarn
	return h
}

// TestDecide: drain on a fatal failure unless drained already; resume only
// gpuprep's own drains, only when nothing fatal fails (a standing Xid is a
// fatal failure: TestStandingXIDs); never touch anyone else's drain.
func TestDecide(t *testing.T) {
	fatal := &Report{Results: []Result{{Check: "ecc_volatile", Scope: "GPU 3 (0000:9a:00.0)", BusID: "0000:9a:00.0", Status: Fail, Severity: config.HealthFatal, Reason: "GPU 3 (0000:9a:00.0): 2 volatile uncorrectable ECC errors"},
		{Check: "swap", Scope: nodeScope, Status: Fail, Severity: config.HealthFatal, Reason: "swap is on"}}}
	healthy := &Report{Results: []Result{{Check: "swap", Scope: nodeScope, Status: OK}}}

	idle := slurm.NodeState{Name: "n1", State: "IDLE"}
	ours := slurm.NodeState{Name: "n1", State: "IDLE+DRAIN", Reason: "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79"}
	prologs := slurm.NodeState{Name: "n1", State: "IDLE+DRAIN", Reason: "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 (...)"}
	applyFail := slurm.NodeState{Name: "n1", State: "IDLE+DRAIN", Reason: "gpuprep-prolog: cpu_governor: write failed"}
	admin := slurm.NodeState{Name: "n1", State: "MIXED+DRAIN", Reason: "admin: fan 3"}
	for _, c := range []struct {
		name   string
		rep    *Report
		node   slurm.NodeState
		known  bool
		action Action
		why    string
	}{
		{"fatal drains an idle node", fatal, idle, true, Drain, "(+1 more)"},
		{"fatal, state unknown: drain anyway", fatal, idle, false, Drain, "ecc_volatile"},
		{"fatal, drained by gpuprep: kept", fatal, ours, true, Nothing, "already drained by gpuprep"},
		{"fatal, drained by the admin: left alone", fatal, admin, true, Nothing, "someone else"},
		{"healthy idle: nothing", healthy, idle, true, Nothing, "healthy"},
		{"healthy, gpuprep's drain: resumed", healthy, ours, true, Resume, "every check passes"},
		{"healthy, the prolog's health drain: resumed", healthy, prologs, true, Resume, "every check passes"},
		{"healthy, the prolog failed to apply: left alone", healthy, applyFail, true, Nothing, "someone else"},
		{"healthy, admin's drain: left alone", healthy, admin, true, Nothing, "someone else"},
		{"healthy, state unknown: nothing", healthy, ours, false, Nothing, "unknown"},
	} {
		d := Decide(c.rep, c.node, c.known)
		if d.Action != c.action || !strings.Contains(d.Why, c.why) {
			t.Errorf("%s: %+v, want %s with %q", c.name, d, c.action, c.why)
		}
		if d.Action == Drain && (!strings.HasPrefix(d.Reason, DrainPrefix) || !OwnsDrain(d.Reason)) {
			t.Errorf("%s: drain reason %q is not one gpuprep-health lifts", c.name, d.Reason)
		}
	}
}

// TestStandingXIDs: a fatal record stands, a warning one does not; a
// memory-error Xid (48) stops standing while the row_remap check passes
// on its GPU, never on another GPU's, and Xid 79 never does; Xid 154
// stands for the action it changed to, unless that is none.
func TestStandingXIDs(t *testing.T) {
	h := xidHealth()
	const a, b = "0000:18:00.0", "0000:9a:00.0"
	none, reset := gpu.RecoveryNone, gpu.RecoveryGPUReset
	hist := map[string]GPUHistory{
		a: {{Code: 13, Count: 5}, {Code: 48, Count: 1}, {Code: 79, Count: 2}, {Code: 154, To: &none}},
		b: {{Code: 48, Count: 1}, {Code: 154, To: &reset}},
	}
	var got []string
	for _, s := range StandingXIDs(hist, h, map[string]bool{a: true}) {
		got = append(got, fmt.Sprintf("%s %d", s.BusID, s.Code))
	}
	if want := []string{a + " 79", b + " 48", b + " 154"}; !slices.Equal(got, want) {
		t.Errorf("standing %v, want %v", got, want)
	}
	h.Severity = map[string]string{"xid": "warn"}
	if s := StandingXIDs(hist, h, nil); len(s) != 0 {
		t.Errorf("xid = warn: %+v stand", s)
	}
}

// TestStandingResults: one fatal xid result per GPU a fatal Xid stands
// against, naming each of its Xids, with the code of the one whose action
// does the most, the GPU named from the devices (or by bus id alone);
// none where the xid check is off.
func TestStandingResults(t *testing.T) {
	h := xidHealth()
	const a, b = "0000:18:00.0", "0000:9a:00.0"
	hist := map[string]GPUHistory{
		a: {{Code: 13, Count: 5}, {Code: 79, Count: 2, Text: "GPU has fallen off the bus."}},
		b: {{Code: 48, Count: 1}, {Code: 79, Count: 1}},
	}
	res := standingResults(hist, h, nil, []gpu.Device{{Index: 0, BusID: a}})
	if len(res) != 2 {
		t.Fatalf("%d results: %+v", len(res), res)
	}
	if r := res[0]; r.Check != "xid" || r.Status != Fail || r.Severity != config.HealthFatal || r.BusID != a ||
		r.Scope != "GPU 0 ("+a+")" || r.Code != "XID79" || !strings.Contains(r.Reason, "Xid 79 not cleared (2 times") || strings.Contains(r.Reason, "Xid 13") {
		t.Errorf("GPU 0: %+v", r)
	}
	if r := res[1]; r.Scope != "GPU ? ("+b+")" || !strings.Contains(r.Reason, "Xid 48") || !strings.Contains(r.Reason, "Xid 79") || r.Code != "XID79" {
		t.Errorf("the other GPU: %+v", r)
	}
	h.Severity = map[string]string{"xid": "off"}
	if res := standingResults(hist, h, nil, nil); len(res) != 0 {
		t.Errorf("xid = off: %+v", res)
	}
}

// TestDrainReason: the code and what to do come first, then what was
// found; a result with no code (made by hand) names its check.
func TestDrainReason(t *testing.T) {
	r := failWhole("xid", "GPU 0 (0000:18:00.0)", "GPU 0 (0000:18:00.0): Xid 79 (GPU has fallen off the bus)").withCode(xidCode(79))
	second := fail("pcie_link", "GPU 1 (0000:2a:00.0)", "PCIe link width x8, want x16")
	got := DrainReason([]Result{r, second})
	if got != "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 (GPU has fallen off the bus) (+1 more)" {
		t.Errorf("%q", got)
	}
	if got := DrainReason([]Result{second}); got != "gpuprep: PCIE_DEGRADED check_hardware: GPU 1 (0000:2a:00.0): PCIe link width x8, want x16" {
		t.Errorf("%q", got)
	}
	if got := DrainReason([]Result{{Check: "xid", Reason: "GPU 0: Xid 79"}}); got != "gpuprep: xid: GPU 0: Xid 79" {
		t.Errorf("no code: %q", got)
	}
}

// TestBootGrace: within the grace the daemon-dependent checks only warn,
// the rest keep their severity; after it nothing changes.
func TestBootGrace(t *testing.T) {
	mk := func() *Report {
		return &Report{Results: []Result{
			{Check: "persistence", Status: Fail, Severity: config.HealthFatal, Reason: "persistence mode off"},
			{Check: "nvlinks", Status: Fail, Severity: config.HealthFatal, Reason: "12 of 18 NVLinks active"},
			{Check: "xid", Status: Fail, Severity: config.HealthFatal, Reason: "Xid 79"},
			{Check: "ecc_volatile", Status: Fail, Severity: config.HealthFatal, Reason: "2 DBE"},
		}}
	}
	rep := mk()
	ApplyBootGrace(rep, 90*time.Second)
	if len(rep.Fatal()) != 2 || rep.Fatal()[0].Check != "xid" || rep.Fatal()[1].Check != "ecc_volatile" {
		t.Errorf("fatal in grace: %+v", rep.Fatal())
	}
	if w := rep.Warnings(); len(w) != 2 || !strings.Contains(w[0].Reason, "boot grace: 1m30s left") {
		t.Errorf("warnings in grace: %+v", w)
	}
	rep = mk()
	ApplyBootGrace(rep, 0)
	if len(rep.Fatal()) != 4 {
		t.Errorf("after the grace: %+v", rep.Fatal())
	}
}

func TestParseUptime(t *testing.T) {
	if d, err := ParseUptime("3605.21 7001.50\n"); err != nil || d != 3605210*time.Millisecond {
		t.Errorf("%v %v", d, err)
	}
	for _, bad := range []string{"", "abc 1", "-5 1", "1e300 1"} {
		if _, err := ParseUptime(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
