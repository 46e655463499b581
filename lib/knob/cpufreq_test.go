package knob

import (
	"errors"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

func cpuKnobs(f files, cpus string) (gov, epp *cpufreqKnob) {
	var set cpuset.Set
	if cpus != "" {
		set = cpuset.MustParse(cpus)
	}
	sc := newCPUScope(f, set)
	return newGovernor(f, sc), newEPP(f, sc)
}

func TestGovernorRoundTrip(t *testing.T) {
	r := writeTree(t, smallNode().files())
	gov, epp := cpuKnobs(r, "")
	orig, want := roundTrip(t, gov, "performance")
	if orig != "powersave" || want != "performance" {
		t.Fatalf("orig %q want %q", orig, want)
	}
	// Canonical spelling.
	if v := mustDesired(t, gov, " Performance\n"); v != "performance" {
		t.Fatalf("Desired canonical = %q", v)
	}
	roundTrip(t, epp, "performance")
	roundTrip(t, epp, "200")
	if v := mustDesired(t, epp, "007"); v != "7" {
		t.Fatalf("EPP number canonical = %q", v)
	}
	// Apply lets "default" through (a baseline can only hold it if the
	// driver showed it); Desired refuses it.
	mustApply(t, epp, "default")
	if set, err := topo.OnlineCPUs(r); err != nil || set.String() != "0-7" {
		t.Fatalf("OnlineCPUs = %v, %v", set, err)
	}
}

func TestGovernorMixedRestore(t *testing.T) {
	n := smallNode()
	n.governors = []string{"powersave", "powersave", "performance", "performance", "powersave", "schedutil", "powersave", "powersave"}
	r := writeTree(t, n.files())
	gov, _ := cpuKnobs(r, "")
	orig := mustRead(t, gov)
	if orig != "0-1,4,6-7=powersave;2-3=performance;5=schedutil" {
		t.Fatalf("mixed Read = %q", orig)
	}
	mustApply(t, gov, "performance")
	if v := mustRead(t, gov); v != "performance" {
		t.Fatalf("after Apply: %q", v)
	}
	mustApply(t, gov, orig)
	if v := mustRead(t, gov); v != orig {
		t.Fatalf("restored %q, want %q", v, orig)
	}
	if got := get(t, r, cpuFile(5, "cpufreq/scaling_governor")); got != "schedutil" {
		t.Fatalf("cpu5 = %q", got)
	}
	// Desired accepts a per-CPU form, checking every word.
	if v := mustDesired(t, gov, "4-7=performance;0-3=POWERSAVE"); v != "0-3=powersave;4-7=performance" {
		t.Fatalf("per-CPU Desired = %q", v)
	}
	_, err := gov.Desired("0-3=powersave;4-7=turbo")
	wantErr(t, err, "cpu_governor", `"turbo"`, "available: performance powersave")
}

func TestGovernorScopeSubset(t *testing.T) {
	r := writeTree(t, smallNode().files())
	gov, _ := cpuKnobs(r, "2-3")
	mustApply(t, gov, "performance")
	all, _ := cpuKnobs(r, "")
	if v := mustRead(t, all); v != "0-1,4-7=powersave;2-3=performance" {
		t.Fatalf("node after applying to 2-3: %q", v)
	}
	err := gov.Apply("0-3=performance")
	wantErr(t, err, "cpu_governor", "CPUs 0-1 are not in scope (2-3)")
}

func TestGovernorDesiredErrors(t *testing.T) {
	r := writeTree(t, smallNode().files())
	gov, epp := cpuKnobs(r, "")
	for _, tc := range []struct {
		k       Knob
		setting string
		want    []string
	}{
		{gov, "ondemand", []string{"cpu_governor", `"ondemand"`, "available: performance powersave"}},
		{gov, "perf ormance", []string{"cpu_governor", "not a governor"}},
		{gov, "", []string{"cpu_governor", "not a governor"}},
		{epp, "turbo", []string{"energy_performance_preference", `"turbo"`, "balance_power"}},
		{epp, "256", []string{"energy_performance_preference", "0..255"}},
		{epp, "-1", []string{"energy_performance_preference", "0..255"}},
		{epp, "default", []string{"energy_performance_preference", "boot-time"}},
	} {
		_, err := tc.k.Desired(tc.setting)
		wantErr(t, err, tc.want...)
	}
}

func TestGovernorSkipsCPUsAlreadyRight(t *testing.T) {
	n := smallNode()
	n.governors = []string{"performance", "performance", "powersave", "performance", "performance", "performance", "performance", "performance"}
	r := writeTree(t, n.files())
	// A write to CPU 0 would leave "WRITTEN" there.
	kfs := newKernelFS(r)
	gov, _ := cpuKnobs(kfs, "")
	kfs.keep[cpuFile(0, "cpufreq/scaling_governor")] = "WRITTEN"
	mustApply(t, gov, "performance")
	if got := get(t, r, cpuFile(0, "cpufreq/scaling_governor")); got != "performance" {
		t.Fatalf("CPU 0 was written: %q", got)
	}
}

func TestGovernorMismatch(t *testing.T) {
	r := writeTree(t, smallNode().files())
	kfs := newKernelFS(r)
	gov, epp := cpuKnobs(kfs, "")
	// CPU 6's policy keeps powersave whatever is written.
	kfs.keep[cpuFile(6, "cpufreq/scaling_governor")] = "powersave"
	err := gov.Apply("performance")
	wantMismatch(t, err, "performance", "0-5,7=performance;6=powersave")
	wantErr(t, err, "cpu_governor@node", `wrote "performance"`)

	// A raw EPP number the driver shows by its name.
	for c := range 8 {
		kfs.keep[cpuFile(c, "cpufreq/energy_performance_preference")] = "balance_performance"
	}
	err = epp.Apply("128")
	wantMismatch(t, err, "128", "balance_performance")
	wantErr(t, err, "set the name instead")
}

func TestCPUFreqUnsupported(t *testing.T) {
	n := smallNode()
	n.governors, n.epp = nil, nil
	r := writeTree(t, n.files())
	gov, epp := cpuKnobs(r, "")
	for _, k := range []Knob{gov, epp} {
		_, err := k.Read()
		wantUnsupported(t, err)
		_, err = k.Desired("performance")
		wantUnsupported(t, err)
		err = k.Apply("performance")
		wantUnsupported(t, err)
	}
	// cpufreq without EPP (acpi-cpufreq): governor works, EPP unsupported.
	n = smallNode()
	n.epp = nil
	r = writeTree(t, n.files())
	gov, epp = cpuKnobs(r, "")
	mustRead(t, gov)
	_, err := epp.Read()
	wantUnsupported(t, err)
	wantErr(t, err, "energy_performance_preference", "cpu0/cpufreq/energy_performance_preference is absent")
}

func TestCPUFreqGarbage(t *testing.T) {
	for _, content := range []string{"performance\x00junk", "a=b", "perf;x", "", "two words", "\xff\xfe"} {
		r := writeTree(t, smallNode().files())
		p := cpuFile(3, "cpufreq/scaling_governor")
		set(t, r, p, content)
		gov, _ := cpuKnobs(r, "")
		_, err := gov.Read()
		wantErr(t, err, "cpu_governor", p)
		if errors.Is(err, ErrUnsupported) {
			t.Fatalf("garbage %q reported as unsupported", content)
		}
		// Apply writes over garbage (see TestApplyOverGarbage).
		mustApply(t, gov, "performance")
		if got := get(t, r, p); got != "performance" {
			t.Fatalf("after Apply over %q: %q", content, got)
		}
	}
	// Garbage in the list of available governors.
	r := writeTree(t, smallNode().files())
	p := cpuFile(0, "cpufreq/scaling_available_governors")
	set(t, r, p, "performance pow;ersave")
	gov, _ := cpuKnobs(r, "")
	_, err := gov.Desired("performance")
	wantErr(t, err, p)
	// A CPU after the first without the file: an error, not unsupported.
	r = writeTree(t, smallNode().files())
	gov, _ = cpuKnobs(r, "0-8")
	_, err = gov.Read()
	wantErr(t, err, "cpu8/cpufreq/scaling_governor")
	if errors.Is(err, ErrUnsupported) {
		t.Fatal("missing CPU 8 reported as unsupported")
	}
}

// TestCPUFreqReadsOncePerCPU: a Read of 224 CPUs reads 224 files, and an
// Apply with nothing to change writes none.
func TestCPUFreqReadsOncePerCPU(t *testing.T) {
	n := smallNode()
	n.cpus = 224
	n.governors, n.epp, n.latencies = nil, nil, []int{0, 2, 4, 170}
	for range 224 {
		n.governors = append(n.governors, "performance")
	}
	kfs := newKernelFS(writeTree(t, n.files()))
	gov, _ := cpuKnobs(kfs, "")
	if got := kfs.reads.Swap(0); got != 1 {
		t.Fatalf("building the knobs did %d reads, want 1 (online)", got)
	}
	mustRead(t, gov)
	if got := kfs.reads.Swap(0); got != 224 {
		t.Fatalf("Read did %d reads, want 224", got)
	}
	for c := range 224 {
		kfs.keep[cpuFile(c, "cpufreq/scaling_governor")] = "WRITTEN"
	}
	mustApply(t, gov, "performance") // would mismatch had it written
	if got := kfs.reads.Swap(0); got != 224 {
		t.Fatalf("Apply did %d reads, want 224", got)
	}
	cs := newCState(kfs, gov.cpus)
	mustRead(t, cs)
	if got := kfs.reads.Swap(0); got != 224*4 {
		t.Fatalf("cstate Read did %d reads, want %d", got, 224*4)
	}
}
