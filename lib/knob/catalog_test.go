package knob

import (
	"errors"
	"slices"
	"testing"

	"gpuprep/lib/isolate"
	"gpuprep/lib/isolate/cgwriter"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// everySetting sets every knob, to settings the dgxh100 fixture and its
// mock accept (the canonical strings the configuration's keys decode to).
var everySetting = map[string]string{
	"cpu_governor": "performance", "energy_performance_preference": "performance",
	"cstate_max_latency_us": "10", "thp_enabled": "never", "thp_defrag": "defer+madvise",
	"vm_swappiness": "10", "vm_dirty_ratio": "40", "vm_dirty_background_ratio": "5",
	"vm_zone_reclaim_mode": "1", "kernel_numa_balancing": "0",
	"gpu_persistence": "off", "gpu_compute_mode": "exclusive_process", "gpu_accounting": "on",
	"gpu_locked_clocks_mhz": "1980,1980", "gpu_app_clocks_mhz": "2619,1980", "gpu_power_limit_w": "500",
	"housekeeping_cpus": "0-3", "irq_affinity": "on", "mps": "on",
}

func TestCatalog(t *testing.T) {
	r := writeTree(t, smallNode().files())
	b, devs := mockGPUs(t)
	ks := Catalog(Env{Root: r, GPU: b, GPUs: devs[1:3]})
	if len(ks) != len(NodeKnobNames())+2*len(GPUKnobNames()) {
		t.Fatalf("%d knobs", len(ks))
	}
	var names []string
	for _, k := range ks[:len(NodeKnobNames())] {
		if k.ID().Scope != NodeScope {
			t.Fatalf("%s", k.ID())
		}
		names = append(names, k.ID().Name)
	}
	if !slices.Equal(names, NodeKnobNames()) {
		t.Fatalf("node order %v", names)
	}
	if got := ByScope(ks, GPUScope(devs[2].UUID)); len(got) != len(GPUKnobNames()) || got[0].ID().Name != "gpu_persistence" {
		t.Fatalf("ByScope: %d", len(got))
	}
	if got := ByName(ks, "gpu_power_limit_w"); len(got) != 2 || got[1].ID().Scope != GPUScope(devs[2].UUID) {
		t.Fatalf("ByName: %v", got)
	}
	id := ID{Name: "gpu_compute_mode", Scope: GPUScope(devs[1].UUID)}
	if k := Find(ks, id); k == nil || k.ID() != id {
		t.Fatalf("Find %v", id)
	}
	if Find(ks, ID{Name: "gpu_compute_mode", Scope: GPUScope(devs[0].UUID)}) != nil {
		t.Fatal("found a GPU outside the job")
	}
	if n := len(Catalog(Env{Root: r, GPUs: devs})); n != len(NodeKnobNames()) {
		t.Fatalf("no backend: %d knobs", n)
	}
	// Explicit CPUs.
	gov := Find(Catalog(Env{Root: r, CPUs: cpuset.MustParse("1-2")}), ID{Name: "cpu_governor", Scope: NodeScope})
	mustApply(t, gov, "performance")
	if v := mustRead(t, ByName(Catalog(Env{Root: r}), "cpu_governor")[0]); v != "0,3-7=powersave;1-2=performance" {
		t.Fatalf("governor %q", v)
	}
}

// readAll reads every knob; Unknown and errors are kept as they are.
func readAll(t testing.TB, ks []Knob) map[ID]Value {
	t.Helper()
	out := map[ID]Value{}
	for _, k := range ks {
		out[k.ID()] = mustRead(t, k)
	}
	return out
}

// TestFixtureRoundTrip tunes a writable DGX H100 root and the mock's GPUs
// to a profile setting every knob, from a mixed per-CPU baseline, and
// restores the baseline exactly.
func TestFixtureRoundTrip(t *testing.T) {
	root := knobRoot(t, "dgxh100")
	addServices(t, root)
	b, devs := mockGPUs(t)
	env, _, _, _ := mpsTestEnv(t) // alice's job, a fake MPS control
	ks := Catalog(Env{Root: root, GPU: b, GPUs: devs[:2], Isolation: isolate.Options{Writer: cgwriter.Writer{}},
		User: env.User, UID: env.UID, GID: env.GID, MPS: env.MPS})

	// A mixed baseline: some CPUs on performance, some idle states off.
	for _, c := range []int{5, 6, 7, 100, 223} {
		set(t, root, cpuFile(c, "cpufreq/scaling_governor"), "performance\n")
		set(t, root, cpuFile(c, "cpufreq/energy_performance_preference"), "power\n")
		set(t, root, cpuFile(c+0, "cpuidle/state1/disable"), "1\n")
	}
	base := readAll(t, ks)
	for id, want := range map[ID]Value{
		{Name: "cpu_governor", Scope: NodeScope}:                       "0-4,8-99,101-222=powersave;5-7,100,223=performance",
		{Name: "energy_performance_preference", Scope: NodeScope}:      "0-4,8-99,101-222=balance_performance;5-7,100,223=power",
		{Name: "cstate_max_latency_us", Scope: NodeScope}:              "0-4,8-99,101-222=;5-7,100,223=state1",
		{Name: "thp_enabled", Scope: NodeScope}:                        "madvise",
		{Name: "vm_swappiness", Scope: NodeScope}:                      "60",
		{Name: "kernel_numa_balancing", Scope: NodeScope}:              "1",
		{Name: "gpu_persistence", Scope: GPUScope(devs[1].UUID)}:       "on",
		{Name: "gpu_locked_clocks_mhz", Scope: GPUScope(devs[1].UUID)}: Unknown,
		{Name: "gpu_power_limit_w", Scope: GPUScope(devs[0].UUID)}:     "700",
		{Name: "housekeeping_cpus", Scope: NodeScope}:                  "",
		{Name: "irq_affinity", Scope: NodeScope}:                       "",
	} {
		if base[id] != want {
			t.Errorf("baseline %s = %q, want %q", id, base[id], want)
		}
	}

	desired := map[ID]Value{}
	for _, k := range ks {
		s, ok := everySetting[k.ID().Name]
		if !ok {
			t.Fatalf("no setting for %s", k.ID())
		}
		v := mustDesired(t, k, s)
		desired[k.ID()] = v
		mustApply(t, k, v)
	}
	after := readAll(t, ks)
	for _, k := range ks {
		id := k.ID()
		want := desired[id]
		if id.Name == "gpu_locked_clocks_mhz" {
			want = Unknown
		}
		if after[id] != want {
			t.Errorf("after apply %s = %q, want %q", id, after[id], want)
		}
	}
	if after[ID{Name: "cstate_max_latency_us", Scope: NodeScope}] != "state3" {
		t.Errorf("cstate after apply: %q", after[ID{Name: "cstate_max_latency_us", Scope: NodeScope}])
	}
	if got := get(t, root, thpDir+"/defrag"); got != "always defer [defer+madvise] madvise never" {
		t.Errorf("defrag file %q", got)
	}

	// Restore, in catalog order (the governor before the EPP).
	for _, k := range ks {
		mustApply(t, k, base[k.ID()])
	}
	if got := readAll(t, ks); !mapsEqual(got, base) {
		t.Fatalf("restored %v\nbaseline %v", got, base)
	}
	// Applying the same again changes nothing and is still right.
	for _, k := range ks {
		mustApply(t, k, base[k.ID()])
	}
}

func mapsEqual(a, b map[ID]Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFixtureShapes reads every node knob on each fixture root (read-only,
// shared copies): what exists where.
func TestFixtureShapes(t *testing.T) {
	type want map[string]Value // knob -> value; "-" = unsupported
	for _, tc := range []struct {
		root string
		want want
	}{
		{"dgxh100", want{"cpu_governor": "powersave", "energy_performance_preference": "balance_performance",
			"cstate_max_latency_us": "", "thp_enabled": "madvise", "thp_defrag": "madvise", "vm_swappiness": "60",
			"vm_dirty_ratio": "20", "vm_dirty_background_ratio": "10", "vm_zone_reclaim_mode": "0", "kernel_numa_balancing": "1"}},
		{"dgxb200", want{"energy_performance_preference": "balance_performance"}},
		{"dgxa100", want{"cpu_governor": "ondemand", "energy_performance_preference": "-", "cstate_max_latency_us": ""}},
		{"gh200", want{"cpu_governor": "schedutil", "energy_performance_preference": "-", "cstate_max_latency_us": ""}},
		{"cloudvm", want{"cpu_governor": "-", "energy_performance_preference": "-", "cstate_max_latency_us": "-", "thp_enabled": "always"}},
		{"h200x2", want{"cpu_governor": "-", "energy_performance_preference": "-", "cstate_max_latency_us": "-",
			"thp_enabled": "madvise", "thp_defrag": "madvise"}},
	} {
		t.Run(tc.root, func(t *testing.T) {
			root := host.NewRoot(testroot.Shared(t, tc.root))
			for _, k := range Catalog(Env{Root: root}) {
				v, err := k.Read()
				w, ok := tc.want[k.ID().Name]
				switch {
				case err != nil && !errors.Is(err, ErrUnsupported):
					t.Errorf("%s: %v", k.ID(), err)
				case !ok:
				case w == "-" && !errors.Is(err, ErrUnsupported):
					t.Errorf("%s = %q, want unsupported", k.ID(), v)
				case w != "-" && v != w:
					t.Errorf("%s = %q (%v), want %q", k.ID(), v, err, w)
				}
			}
		})
	}
}

// BenchmarkReadNode reads every node knob of the 224-CPU DGX H100 root.
func BenchmarkReadNode(b *testing.B) {
	ks := Catalog(Env{Root: host.NewRoot(testroot.Shared(b, "dgxh100"))})
	for b.Loop() {
		for _, k := range ks {
			if _, err := k.Read(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadGPUs reads the knobs of the mock's 8 GPUs.
func BenchmarkReadGPUs(b *testing.B) {
	bk, devs := mockGPUs(b)
	ks := Catalog(Env{GPU: bk, GPUs: devs, CPUs: cpuset.New(0)})
	ks = ks[len(NodeKnobNames()):]
	for b.Loop() {
		for _, k := range ks {
			if _, err := k.Read(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

var _ gpu.Backend = (*fakeGPU)(nil)
