package knob

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// cpusetOf parses a CPU list; "" is the empty set (the online CPUs).
func cpusetOf(t testing.TB, s string) cpuset.Set {
	t.Helper()
	if s == "" {
		return cpuset.Set{}
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// eioFS wraps a root so that reading a path in bad fails with EIO until
// the path is written: a file that cannot be read but can be written.
type eioFS struct {
	host.Root
	mu  sync.Mutex
	bad map[string]bool
}

func (e *eioFS) ReadString(p string) (string, error) {
	e.mu.Lock()
	bad := e.bad[p]
	e.mu.Unlock()
	if bad {
		return "", fmt.Errorf("read %s: %w", p, syscall.EIO)
	}
	return e.Root.ReadString(p)
}

func (e *eioFS) WriteFile(p, v string) (string, error) {
	e.mu.Lock()
	delete(e.bad, p)
	e.mu.Unlock()
	return e.Root.WriteFile(p, v)
}

// TestApplyOverGarbage: Apply of a journaled value puts it back exactly
// whatever the files hold now (empty, as a fixture file left by a killed
// run used to be; garbage; unreadable), while Read still reports the
// garbage. Over the dgxh100 fixture, whose cpu<N>/cpufreq are links to
// cpufreq/policy<N>.
func TestApplyOverGarbage(t *testing.T) {
	r := knobRoot(t, "dgxh100")
	knobs := NodeKnobs(r, cpusetOf(t, ""))
	gov, epp, cst := knobs[0], knobs[1], knobs[2]

	cases := []struct {
		k       Knob
		setting string   // a value unlike the fixture's, applied first
		files   []string // corrupted before restoring
	}{
		{gov, "performance", []string{cpuFile(99, "cpufreq/scaling_governor"), cpuFile(0, "cpufreq/scaling_governor"), cpuFile(223, "cpufreq/scaling_governor")}},
		{epp, "power", []string{cpuFile(99, "cpufreq/energy_performance_preference"), cpuFile(5, "cpufreq/energy_performance_preference")}},
		{cst, "3", []string{cpuFile(99, "cpuidle/state3/disable"), cpuFile(0, "cpuidle/state0/disable"), cpuFile(7, "cpuidle/state2/disable")}},
	}
	for _, tc := range cases {
		for _, junk := range []string{"", "two words\n"} {
			journaled := mustRead(t, tc.k)
			// A mixed value, as a journal may hold, then back.
			mixed := Value("0-9=" + string(mustDesired(t, tc.k, tc.setting)) + ";10-223=" + string(journaled))
			if tc.k == cst {
				mixed = Value("0-9=state3;10-223=" + string(journaled))
			}
			mustApply(t, tc.k, mixed)
			for _, p := range tc.files {
				set(t, r, p, junk)
			}
			_, err := tc.k.Read()
			wantErr(t, err, tc.k.ID().Name, "unexpected content")
			mustApply(t, tc.k, journaled)
			if got := mustRead(t, tc.k); got != journaled {
				t.Fatalf("%s over %q: Read after restoring %q = %q", tc.k.ID(), junk, journaled, got)
			}
			for _, p := range tc.files {
				if got := get(t, r, p); got == junk {
					t.Fatalf("%s: %s still holds %q", tc.k.ID(), p, junk)
				}
			}
			// And the other way: the new value over garbage.
			for _, p := range tc.files {
				set(t, r, p, junk)
			}
			mustApply(t, tc.k, mixed)
			if got := mustRead(t, tc.k); got != mixed {
				t.Fatalf("%s over %q: Read after Apply(%q) = %q", tc.k.ID(), junk, mixed, got)
			}
			mustApply(t, tc.k, journaled)
		}
	}
	// Exact file contents after a restore over an empty file.
	set(t, r, cpuFile(99, "cpufreq/scaling_governor"), "")
	mustApply(t, gov, "powersave")
	if got := get(t, r, "/sys/devices/system/cpu/cpufreq/policy99/scaling_governor"); got != "powersave" {
		t.Fatalf("policy99/scaling_governor = %q", got)
	}
	set(t, r, cpuFile(99, "cpufreq/energy_performance_preference"), "")
	mustApply(t, epp, "balance_performance")
	if got := get(t, r, cpuFile(99, "cpufreq/energy_performance_preference")); got != "balance_performance" {
		t.Fatalf("cpu99 EPP = %q", got)
	}
	set(t, r, cpuFile(99, "cpuidle/state2/disable"), "")
	mustApply(t, cst, "")
	if got := get(t, r, cpuFile(99, "cpuidle/state2/disable")); got != "0" {
		t.Fatalf("cpu99 state2/disable = %q", got)
	}
}

// TestApplyOverUnreadable: a present file that cannot be read counts as
// differing and is written; Read still fails on it.
func TestApplyOverUnreadable(t *testing.T) {
	r := writeTree(t, smallNode().files())
	for _, tc := range []struct {
		name, path string
		want       Value
		content    string // the file after Apply
	}{
		{"cpu_governor", cpuFile(3, "cpufreq/scaling_governor"), "powersave", "powersave"},
		{"energy_performance_preference", cpuFile(3, "cpufreq/energy_performance_preference"), "balance_performance", "balance_performance"},
		{"cstate_max_latency_us", cpuFile(3, "cpuidle/state3/disable"), "", "0"},
		{"thp_enabled", thpDir + "/enabled", "madvise", "always [madvise] never"},
		{"thp_defrag", thpDir + "/defrag", "never", "always defer defer+madvise madvise [never]"},
	} {
		e := &eioFS{Root: r, bad: map[string]bool{tc.path: true}}
		k := Find(nodeKnobs(e, cpusetOf(t, "")), ID{Name: tc.name, Scope: NodeScope})
		_, err := k.Read()
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("%s: Read over an unreadable file: %v", tc.name, err)
		}
		mustApply(t, k, tc.want)
		if got := mustRead(t, k); got != tc.want {
			t.Fatalf("%s: Read = %q, want %q", tc.name, got, tc.want)
		}
		if got := get(t, r, tc.path); got != tc.content {
			t.Fatalf("%s: file holds %q, want %q", tc.name, got, tc.content)
		}
	}
}

// TestApplyOverGarbageStillFails: what Apply cannot write stays an error
// (a CPU after the first without the file), and a knob absent on the
// first CPU stays unsupported.
func TestApplyOverGarbageStillFails(t *testing.T) {
	r := writeTree(t, smallNode().files())
	gov := newGovernor(r, newCPUScope(r, cpusetOf(t, "0-8")))
	err := gov.Apply("performance")
	wantErr(t, err, "cpu_governor", "cpu8/cpufreq/scaling_governor")
	if errors.Is(err, ErrUnsupported) {
		t.Fatal("missing CPU 8 reported as unsupported")
	}
	cst := newCState(r, newCPUScope(r, cpusetOf(t, "0-8")))
	err = cst.Apply("")
	wantErr(t, err, "cstate_max_latency_us", "cpu8/cpuidle/state0/disable")
	if errors.Is(err, ErrUnsupported) {
		t.Fatal("missing CPU 8 reported as unsupported")
	}
	n := smallNode()
	n.governors, n.epp, n.latencies = nil, nil, nil
	r = writeTree(t, n.files())
	for _, k := range nodeKnobs(r, cpusetOf(t, ""))[:3] {
		wantUnsupported(t, k.Apply("performance"))
	}
	r = writeTree(t, map[string]string{"/proc/sys/vm/swappiness": "60"})
	wantUnsupported(t, newTHP(r, "thp_enabled", "enabled").Apply("never"))
}

// TestTHPOverGarbage: THP's Apply over an empty or garbage file, or over
// the bare word a run killed between Apply's two writes leaves, writes
// the kernel's list; Read takes a bare valid word as that value and still
// refuses garbage.
func TestTHPOverGarbage(t *testing.T) {
	for _, tc := range []struct {
		file, before string
		want         Value
		after        string
	}{
		{"enabled", "", "madvise", "always [madvise] never"},
		{"enabled", "always madvise never", "never", "always madvise [never]"},
		{"enabled", "[always] [never]", "always", "[always] madvise never"},
		{"enabled", "never", "madvise", "always [madvise] never"},
		{"enabled", "never\n", "never", "always madvise [never]"},
		{"defrag", "", "defer+madvise", "always defer [defer+madvise] madvise never"},
		{"defrag", "defer", "madvise", "always defer defer+madvise [madvise] never"},
		{"defrag", "\xff\xfe", "always", "[always] defer defer+madvise madvise never"},
		// A list lacking the word (an old kernel's, in a fixture): the
		// kernel's list is shown.
		{"defrag", "always [madvise] never", "defer", "always [defer] defer+madvise madvise never"},
	} {
		r := writeTree(t, smallNode().files())
		p := thpDir + "/" + tc.file
		set(t, r, p, tc.before)
		k := newTHP(r, "thp_"+tc.file, tc.file)
		mustApply(t, k, tc.want)
		if got := get(t, r, p); got != tc.after {
			t.Errorf("%s %q: after Apply(%q) the file holds %q, want %q", tc.file, tc.before, tc.want, got, tc.after)
		}
		if got := mustRead(t, k); got != tc.want {
			t.Errorf("%s %q: Read = %q", tc.file, tc.before, got)
		}
	}
	// A bare word reads as that value, and offers the kernel's words.
	r := writeTree(t, smallNode().files())
	set(t, r, thpDir+"/defrag", "defer+madvise\n")
	k := newTHP(r, "thp_defrag", "defrag")
	if got := mustRead(t, k); got != "defer+madvise" {
		t.Fatalf("Read of a bare word = %q", got)
	}
	if got := mustDesired(t, k, "defer"); got != "defer" {
		t.Fatalf("Desired over a bare word = %q", got)
	}
	// A bare word the file never offers is still garbage.
	for _, content := range []string{"defer", "sometimes", "[madvise"} {
		set(t, r, thpDir+"/enabled", content)
		_, err := newTHP(r, "thp_enabled", "enabled").Read()
		wantErr(t, err, "thp_enabled", thpDir+"/enabled")
	}
}
