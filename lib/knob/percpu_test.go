package knob

import (
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
)

func scopeOf(s string) *cpuScope { return newCPUScope(nil, cpuset.MustParse(s)) }

func TestFormatPerCPU(t *testing.T) {
	ids := cpuset.MustParse("0-9").List()
	rep := func(pattern ...string) []string { // pattern: one value per CPU
		return pattern
	}
	for _, tc := range []struct {
		vals []string
		want Value
	}{
		{rep("p", "p", "p", "p", "p", "p", "p", "p", "p", "p"), "p"},
		{rep("", "", "", "", "", "", "", "", "", ""), ""},
		{rep("powersave", "powersave", "powersave", "powersave", "performance", "performance", "performance", "performance", "powersave", "performance"),
			"0-3,8=powersave;4-7,9=performance"},
		// groups sorted by lowest CPU, not by value
		{rep("b", "a", "a", "a", "a", "a", "a", "a", "a", "a"), "0=b;1-9=a"},
		{rep("state2,state3", "state2,state3", "", "", "", "", "", "", "", ""), "0-1=state2,state3;2-9="},
	} {
		if got := formatPerCPU(ids, tc.vals); got != tc.want {
			t.Errorf("formatPerCPU(%q) = %q, want %q", tc.vals, got, tc.want)
		}
		back, err := parsePerCPU(tc.want, scopeOf("0-9"))
		if err != nil {
			t.Errorf("parsePerCPU(%q): %v", tc.want, err)
			continue
		}
		if strings.Join(back, "|") != strings.Join(tc.vals, "|") {
			t.Errorf("parsePerCPU(%q) = %q, want %q", tc.want, back, tc.vals)
		}
	}
}

func TestParsePerCPUNonCanonical(t *testing.T) {
	// Any CPU list spelling is accepted; the format is canonical again.
	vals, err := parsePerCPU("4,5,6,7=performance;3,0-2=powersave", scopeOf("0-7"))
	if err != nil {
		t.Fatal(err)
	}
	if got := formatPerCPU(cpuset.MustParse("0-7").List(), vals); got != "0-3=powersave;4-7=performance" {
		t.Fatalf("got %q", got)
	}
}

func TestParsePerCPUErrors(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{"0-3=a;4-6=b", "no value for CPUs 7"},
		{"0-3=a;4-8=b", "CPUs 8 are not in scope (0-7)"},
		{"0-4=a;4-7=b", "CPU 4 is in two groups"},
		{"0-3=a;4-7", `group "4-7" is not <cpus>=<value>`},
		{"0-3=a;x=b", "cpu list"},
		{"0-3=a;=b", "names no CPU"},
		{"3-0=a", "descending"},
	} {
		_, err := parsePerCPU(tc.v, scopeOf("0-7"))
		wantErr(t, err, tc.want)
	}
}

func TestScopeFromOnline(t *testing.T) {
	r := writeTree(t, map[string]string{"/sys/devices/system/cpu/online": "0-3,8-11\n"})
	sc := newCPUScope(r, cpuset.Set{})
	ids, err := sc.list()
	if err != nil || cpuset.New(ids...).String() != "0-3,8-11" {
		t.Fatalf("ids %v, err %v", ids, err)
	}
	// Explicit CPUs win over online.
	if ids, _ := newCPUScope(r, cpuset.MustParse("2")).list(); len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("explicit: %v", ids)
	}
	bad := writeTree(t, map[string]string{"/sys/devices/system/cpu/online": "zz\n"})
	_, err = newCPUScope(bad, cpuset.Set{}).list()
	wantErr(t, err, "/sys/devices/system/cpu/online")
	_, err = newGovernor(bad, newCPUScope(bad, cpuset.Set{})).Read()
	wantErr(t, err, "cpu_governor", "online")
}
