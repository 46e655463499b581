package health

import (
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/slurm"
)

func xidHealth() config.HealthSection {
	h := config.Default().Health
	h.XIDFatal, h.XIDWarn, h.XIDOther = []int{48, 79, 94}, []int{13}, config.HealthWarn
	return h
}

// TestDecide: drain on a fatal failure unless drained already; resume only
// gpuprep's own drains, only when nothing fatal fails and no fatal Xid
// stands; never touch anyone else's drain.
func TestDecide(t *testing.T) {
	h := xidHealth()
	fatal := &Report{Results: []Result{{Check: "ecc_volatile", Scope: "GPU 3 (0000:9a:00.0)", BusID: "0000:9a:00.0", Status: Fail, Severity: config.HealthFatal, Reason: "GPU 3 (0000:9a:00.0): 2 volatile uncorrectable ECC errors"},
		{Check: "swap", Scope: nodeScope, Status: Fail, Severity: config.HealthFatal, Reason: "swap is on"}}}
	healthy := &Report{Results: []Result{{Check: "swap", Scope: nodeScope, Status: OK}}}
	xid79 := &Report{History: map[string][]XID{"0000:18:00.0": {{Code: 79, BusID: "0000:18:00.0"}}}}
	xid13 := &Report{History: map[string][]XID{"0000:18:00.0": {{Code: 13, BusID: "0000:18:00.0"}}}}
	// Xid 48 (double-bit ECC) is cleared by a row_remap check that passed
	// on that GPU, never by one that was skipped or failed elsewhere.
	xid48clear := &Report{History: map[string][]XID{"0000:18:00.0": {{Code: 48, BusID: "0000:18:00.0"}}},
		Results: []Result{{Check: "row_remap", BusID: "0000:18:00.0", Status: OK}}}
	xid48other := &Report{History: map[string][]XID{"0000:18:00.0": {{Code: 48, BusID: "0000:18:00.0"}}},
		Results: []Result{{Check: "row_remap", BusID: "0000:9a:00.0", Status: OK}, {Check: "row_remap", BusID: "0000:18:00.0", Status: Skip}}}
	xid79remap := &Report{History: map[string][]XID{"0000:18:00.0": {{Code: 79, BusID: "0000:18:00.0"}}},
		Results: []Result{{Check: "row_remap", BusID: "0000:18:00.0", Status: OK}}}

	idle := slurm.NodeState{Name: "n1", State: "IDLE"}
	ours := slurm.NodeState{Name: "n1", State: "IDLE+DRAIN", Reason: "gpuprep: xid: GPU 0 (0000:18:00.0): Xid 79"}
	prologs := slurm.NodeState{Name: "n1", State: "IDLE+DRAIN", Reason: "gpuprep-prolog: health: GPU 0 (0000:18:00.0): Xid 79 (...)"}
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
		{"fatal Xid standing: stays drained", xid79, ours, true, Nothing, "Xid 79 on 0000:18:00.0 not cleared"},
		{"row remap clear does not clear Xid 79", xid79remap, ours, true, Nothing, "Xid 79"},
		{"a warning Xid does not hold it", xid13, ours, true, Resume, ""},
		{"Xid 48 cleared by row remapping", xid48clear, ours, true, Resume, ""},
		{"Xid 48 not cleared by another GPU's remapping", xid48other, ours, true, Nothing, "row remapping reading clear"},
	} {
		d := Decide(c.rep, h, c.node, c.known)
		if d.Action != c.action || !strings.Contains(d.Why, c.why) {
			t.Errorf("%s: %+v, want %s with %q", c.name, d, c.action, c.why)
		}
		if d.Action == Drain && (!strings.HasPrefix(d.Reason, DrainPrefix) || !OwnsDrain(d.Reason)) {
			t.Errorf("%s: drain reason %q is not one gpuprep-health lifts", c.name, d.Reason)
		}
	}
}

func TestDrainReason(t *testing.T) {
	got := DrainReason([]Result{{Check: "xid", Reason: "GPU 0 (0000:18:00.0): Xid 79 (GPU has fallen off the bus)"}})
	if got != "gpuprep: xid: GPU 0 (0000:18:00.0): Xid 79 (GPU has fallen off the bus)" {
		t.Errorf("%q", got)
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
