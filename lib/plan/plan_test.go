package plan

import (
	"errors"
	"strings"
	"testing"

	"gpuprep/lib/knobval"
)

var gov = knobval.ID{Name: "cpu_governor", Scope: knobval.NodeScope}
var thp = knobval.ID{Name: "thp_enabled", Scope: knobval.NodeScope}
var pers = knobval.ID{Name: "gpu_persistence", Scope: knobval.GPUScope("GPU-1")}

func empty() NodeState {
	return NodeState{Baseline: map[string]knobval.Value{}, Holders: map[string]Holding{}}
}

func TestForJobChangesAndRecordsBaseline(t *testing.T) {
	obs := []Observed{
		{ID: pers, Current: "off", Desired: "on", HasDesired: true},
		{ID: gov, Current: "powersave", Desired: "performance", HasDesired: true, Required: true},
		{ID: thp, Current: "madvise", Desired: "madvise", HasDesired: true},
		{ID: knobval.ID{Name: "vm_swappiness", Scope: knobval.NodeScope}, Current: "60"}, // profile leaves it alone
	}
	p := ForJob("7", obs, empty())
	if len(p.Changes) != 2 || p.Changes[0].ID != gov || p.Changes[1].ID != pers {
		t.Fatalf("changes %+v (node knobs first, nothing for knobs already right)", p.Changes)
	}
	if p.Changes[0].From != "powersave" || p.Changes[0].To != "performance" || !p.Changes[0].Required {
		t.Errorf("change %+v", p.Changes[0])
	}
	if len(p.Holds) != 3 {
		t.Errorf("holds %+v: the job relies on every knob its profile sets", p.Holds)
	}
	if p.State.Baseline[gov.String()] != "powersave" || p.State.Baseline[thp.String()] != "madvise" {
		t.Errorf("baseline %v", p.State.Baseline)
	}
	if _, ok := p.State.Baseline["vm_swappiness@node"]; ok {
		t.Error("baseline of an untouched knob recorded")
	}
	// Second run of the same job: nothing to change (idempotent).
	obs[0].Current, obs[1].Current = "on", "performance"
	again := ForJob("7", obs, p.State)
	if len(again.Changes) != 0 || len(again.State.Holders[gov.String()].Jobs) != 1 {
		t.Errorf("second run: changes %+v holders %+v", again.Changes, again.State.Holders)
	}
}

func TestBaselineNeverOverwrittenByTunedValue(t *testing.T) {
	p := ForJob("1", []Observed{{ID: gov, Current: "powersave", Desired: "performance", HasDesired: true}}, empty())
	// Job 2 arrives while the node is tuned: the baseline stays.
	p2 := ForJob("2", []Observed{{ID: gov, Current: "performance", Desired: "performance", HasDesired: true}}, p.State)
	if p2.State.Baseline[gov.String()] != "powersave" {
		t.Fatalf("baseline overwritten: %v", p2.State.Baseline)
	}
	// Job 1 leaves: job 2 still holds it, nothing restored.
	r1 := Release("1", p.Holds, reads(map[string]knobval.Value{gov.String(): "performance"}), nil, p2.State)
	if len(r1.Changes) != 0 || len(r1.State.Holders[gov.String()].Jobs) != 1 {
		t.Fatalf("release with another holder: %+v %+v", r1.Changes, r1.State.Holders)
	}
	// Job 2 leaves: back to the baseline.
	r2 := Release("2", p2.Holds, reads(map[string]knobval.Value{gov.String(): "performance"}), nil, r1.State)
	if len(r2.Changes) != 1 || r2.Changes[0].To != "powersave" || len(r2.State.Holders) != 0 {
		t.Fatalf("last release: %+v %+v", r2.Changes, r2.State.Holders)
	}
}

func TestConflictingJobsGetValueInForce(t *testing.T) {
	p := ForJob("1", []Observed{{ID: thp, Current: "always", Desired: "madvise", HasDesired: true}}, empty())
	p2 := ForJob("2", []Observed{{ID: thp, Current: "madvise", Desired: "never", HasDesired: true}}, p.State)
	if len(p2.Changes) != 0 || len(p2.Warnings) != 1 || !strings.Contains(p2.Warnings[0].Text, `keeping "madvise"`) {
		t.Fatalf("conflict: changes %+v warnings %v", p2.Changes, p2.Warnings)
	}
	if p2.Holds[0].Expected != "madvise" {
		t.Errorf("job 2 must expect the value in force, got %q", p2.Holds[0].Expected)
	}
}

func TestSkipsAndRequired(t *testing.T) {
	unsupported := errors.Join(knobval.ErrUnsupported, errors.New("no cpufreq"))
	p := ForJob("1", []Observed{
		{ID: gov, Err: unsupported, Desired: "performance", HasDesired: true, Required: false},
		{ID: thp, Current: "always", DesiredErr: errors.New(`"huge" is not offered`), Required: true},
	}, empty())
	if len(p.Changes) != 0 || len(p.Skipped) != 2 {
		t.Fatalf("%+v", p)
	}
	s, failed := p.Failed()
	if !failed || s.ID != thp {
		t.Errorf("a required knob with a bad setting must fail the plan: %+v", p.Skipped)
	}
}

func TestReleaseFallsBackToDefaults(t *testing.T) {
	st := empty()
	st.Holders[gov.String()] = Holding{Value: "performance", Jobs: []string{"9"}}
	r := Release("9", []Hold{{ID: gov, Expected: "performance"}}, reads(map[string]knobval.Value{gov.String(): "performance"}),
		map[string]knobval.Value{"cpu_governor": "schedutil"}, st)
	if len(r.Changes) != 1 || r.Changes[0].To != "schedutil" {
		t.Fatalf("%+v", r.Changes)
	}
	// Releasing twice is harmless (epilog retried).
	r2 := Release("9", []Hold{{ID: gov, Expected: "performance"}}, reads(map[string]knobval.Value{gov.String(): "schedutil"}), nil, r.State)
	if len(r2.Changes) != 0 {
		t.Errorf("second release changed %+v", r2.Changes)
	}
}

// TestUnknownValuesAlwaysWritten: locked clocks cannot be read back, so they
// are always applied and always restored, and never reported as drift.
func TestUnknownValuesAlwaysWritten(t *testing.T) {
	clk := knobval.ID{Name: "gpu_locked_clocks_mhz", Scope: knobval.GPUScope("GPU-1")}
	p := ForJob("1", []Observed{{ID: clk, Current: knobval.Unknown, Desired: "1980,1980", HasDesired: true}}, empty())
	if len(p.Changes) != 1 {
		t.Fatalf("lock not applied: %+v", p.Changes)
	}
	r := Release("1", p.Holds, reads(map[string]knobval.Value{clk.String(): knobval.Unknown}), nil, p.State)
	if len(r.Changes) != 1 || r.Changes[0].To != knobval.Unknown {
		t.Fatalf("locked clocks not reset at the end: %+v", r.Changes)
	}
	if Drifted("1980,1980", knobval.Unknown) {
		t.Error("an unreadable value reported as drift")
	}
}

// reads is knobs as read now, by ID string, for Release.
func reads(m map[string]knobval.Value) []Observed {
	var out []Observed
	for key, v := range m {
		name, scope, _ := strings.Cut(key, "@")
		out = append(out, Observed{ID: knobval.ID{Name: name, Scope: scope}, Current: v})
	}
	return out
}
