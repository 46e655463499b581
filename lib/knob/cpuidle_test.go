package knob

import (
	"errors"
	"testing"

	"gpuprep/lib/cpuset"
)

func cstateKnobOf(f files, cpus string) *cstateKnob {
	var set cpuset.Set
	if cpus != "" {
		set = cpuset.MustParse(cpus)
	}
	return newCState(f, newCPUScope(f, set))
}

func TestCStateDesired(t *testing.T) {
	r := writeTree(t, smallNode().files()) // latencies 0 2 4 170
	k := cstateKnobOf(r, "")
	for _, tc := range []struct {
		setting string
		want    Value
	}{
		{"10", "state3"},
		{"170", ""},
		{"169", "state3"},
		{"4", "state3"},
		{"3", "state2,state3"},
		{"0", "state1,state2,state3"},
		{" 1000000 ", ""},
	} {
		if got := mustDesired(t, k, tc.setting); got != tc.want {
			t.Errorf("Desired(%q) = %q, want %q", tc.setting, got, tc.want)
		}
	}
	_, err := k.Desired("-1")
	if !errors.Is(err, ErrLeaveAlone) {
		t.Fatalf("Desired(-1) = %v, want ErrLeaveAlone", err)
	}
	for _, bad := range []string{"-2", "ten", "1.5", ""} {
		_, err := k.Desired(bad)
		wantErr(t, err, "cstate_max_latency_us")
		if errors.Is(err, ErrLeaveAlone) {
			t.Fatalf("Desired(%q) is leave-alone", bad)
		}
	}
}

func TestCStateRoundTrip(t *testing.T) {
	r := writeTree(t, smallNode().files())
	k := cstateKnobOf(r, "")
	orig, want := roundTrip(t, k, "3")
	if orig != "" || want != "state2,state3" {
		t.Fatalf("orig %q want %q", orig, want)
	}
	mustApply(t, k, "state2,state3")
	for c := range 8 {
		if get(t, r, cpuFile(c, "cpuidle/state3/disable")) != "1" || get(t, r, cpuFile(c, "cpuidle/state1/disable")) != "0" {
			t.Fatalf("cpu %d files not as applied", c)
		}
	}
	mustApply(t, k, "")
	if get(t, r, cpuFile(5, "cpuidle/state3/disable")) != "0" {
		t.Fatal("Apply(\"\") left state3 disabled")
	}
}

func TestCStateMixedRestore(t *testing.T) {
	n := smallNode()
	n.disabled = map[int]string{0: "0001", 1: "0001", 5: "0110", 7: "1111"}
	r := writeTree(t, n.files())
	k := cstateKnobOf(r, "")
	orig := mustRead(t, k)
	if orig != "0-1=state3;2-4,6=;5=state1,state2;7=state0,state1,state2,state3" {
		t.Fatalf("mixed Read = %q", orig)
	}
	mustApply(t, k, mustDesired(t, k, "10"))
	if v := mustRead(t, k); v != "state3" {
		t.Fatalf("after Apply: %q", v)
	}
	mustApply(t, k, orig)
	if v := mustRead(t, k); v != orig {
		t.Fatalf("restored %q, want %q", v, orig)
	}
}

func TestCStateApplyErrors(t *testing.T) {
	r := writeTree(t, smallNode().files())
	k := cstateKnobOf(r, "")
	wantErr(t, k.Apply("state9"), "cstate_max_latency_us", `no idle state "state9"`, "state0,state1,state2,state3")
	wantErr(t, k.Apply("C6"), `no idle state "C6"`)
	wantErr(t, k.Apply("0-3=state3"), "no value for CPUs 4-7")

	kfs := newKernelFS(r)
	k = cstateKnobOf(kfs, "")
	kfs.keep[cpuFile(2, "cpuidle/state3/disable")] = "0" // firmware refuses
	wantMismatch(t, k.Apply("state3"), "state3", "0-1,3-7=state3;2=")
}

func TestCStateGarbage(t *testing.T) {
	for _, tc := range []struct{ path, content string }{
		{cpuFile(4, "cpuidle/state2/disable"), "2"},
		{cpuFile(4, "cpuidle/state2/disable"), "abc"},
		{cpuFile(0, "cpuidle/state1/disable"), "1\x002"}, // a NUL inside; a trailing one is trimmed
	} {
		r := writeTree(t, smallNode().files())
		set(t, r, tc.path, tc.content)
		k := cstateKnobOf(r, "")
		_, err := k.Read()
		wantErr(t, err, "cstate_max_latency_us", tc.path)
		// Apply writes over garbage (see TestApplyOverGarbage).
		mustApply(t, k, "")
		if got := get(t, r, tc.path); got != "0" {
			t.Fatalf("after Apply over %q: %q", tc.content, got)
		}
	}
	r := writeTree(t, smallNode().files())
	p := cpuFile(0, "cpuidle/state3/latency")
	set(t, r, p, "lots")
	_, err := cstateKnobOf(r, "").Desired("10")
	wantErr(t, err, p)
}

func TestCStateUnsupported(t *testing.T) {
	n := smallNode()
	n.latencies = nil
	r := writeTree(t, n.files())
	k := cstateKnobOf(r, "")
	_, err := k.Read()
	wantUnsupported(t, err)
	_, err = k.Desired("10")
	wantUnsupported(t, err)
	wantUnsupported(t, k.Apply(""))
	// A cpuidle folder without states (cpuidle driver "none").
	r = writeTree(t, map[string]string{
		"/sys/devices/system/cpu/online":         "0\n",
		cpuFile(0, "cpuidle/driver/placeholder"): "",
	})
	_, err = cstateKnobOf(r, "").Read()
	wantUnsupported(t, err)
}

func TestStateNum(t *testing.T) {
	for name, want := range map[string]int{"state0": 0, "state10": 10} {
		if n, ok := stateNum(name); !ok || n != want {
			t.Errorf("stateNum(%q) = %d %v", name, n, ok)
		}
	}
	for _, name := range []string{"state", "statex", "driver", "state1a", "state99999"} {
		if _, ok := stateNum(name); ok {
			t.Errorf("stateNum(%q) ok", name)
		}
	}
}

// TestCStateManyStates: states sort numerically (state10 after state9).
func TestCStateManyStates(t *testing.T) {
	n := smallNode()
	n.cpus = 2
	n.latencies = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	r := writeTree(t, n.files())
	k := cstateKnobOf(r, "")
	if v := mustDesired(t, k, "8"); v != "state9,state10,state11" {
		t.Fatalf("Desired = %q", v)
	}
	roundTrip(t, k, "8")
}
