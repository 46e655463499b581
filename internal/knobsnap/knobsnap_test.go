package knobsnap

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/isolate"
	"gpuprep/lib/isolate/cgwriter"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/knob"
)

func TestKnobOf(t *testing.T) {
	const uuid = "run/gpuprep-mock/GPU-1e0d1697-fb12-2a4f-76c6-69699b1022c5.json"
	for key, want := range map[string]string{
		"sys/devices/system/cpu/cpufreq/policy12/scaling_governor":              "cpu_governor",
		"sys/devices/system/cpu/cpu12/cpufreq/scaling_governor":                 "cpu_governor",
		"sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference":  "energy_performance_preference",
		"sys/devices/system/cpu/cpu3/cpufreq/energy_performance_preference":     "energy_performance_preference",
		"sys/devices/system/cpu/cpu223/cpuidle/state3/disable":                  "cstate_max_latency_us",
		"sys/kernel/mm/transparent_hugepage/enabled":                            "thp_enabled",
		"sys/kernel/mm/transparent_hugepage/defrag":                             "thp_defrag",
		"proc/sys/vm/swappiness":                                                "vm_swappiness",
		"proc/sys/vm/dirty_ratio":                                               "vm_dirty_ratio",
		"proc/sys/vm/dirty_bytes":                                               "vm_dirty_ratio",
		"proc/sys/vm/dirty_background_ratio":                                    "vm_dirty_background_ratio",
		"proc/sys/vm/dirty_background_bytes":                                    "vm_dirty_background_ratio",
		"proc/sys/vm/zone_reclaim_mode":                                         "vm_zone_reclaim_mode",
		"proc/sys/kernel/numa_balancing":                                        "kernel_numa_balancing",
		uuid + "#persistence":                                                   "gpu_persistence",
		uuid + "#compute_mode":                                                  "gpu_compute_mode",
		uuid + "#app_sm_mhz":                                                    "gpu_app_clocks_mhz",
		uuid + "#app_mem_mhz":                                                   "gpu_app_clocks_mhz",
		uuid + "#locked_min_mhz":                                                "gpu_locked_clocks_mhz",
		uuid + "#locked_max_mhz":                                                "gpu_locked_clocks_mhz",
		uuid + "#power_mw":                                                      "gpu_power_limit_w",
		uuid + "#ecc_pending":                                                   "",
		uuid:                                                                    "",
		"run/other/x.json#power_mw":                                             "",
		"sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq":               "",
		"sys/devices/system/cpu/cpufreq/boost":                                  "",
		"sys/devices/system/cpu/cpufreq/ondemand/scaling_governor":              "",
		"sys/devices/system/cpu/cpuidle/state1/disable":                         "",
		"sys/devices/system/cpu/cpu0/cpuidle/state1/latency":                    "",
		"sys/kernel/mm/transparent_hugepage/khugepaged/defrag":                  "",
		"proc/sys/vm/min_free_kbytes":                                           "",
		"sys/devices/system/cpu/cpufreq/policy0/.scaling_governor.gpuprep-tmp-": "",
	} {
		if got := KnobOf(key); got != want {
			t.Errorf("KnobOf(%q) = %q, want %q", key, got, want)
		}
	}
	// Every name KnobOf gives is a knob's.
	names := knob.Names()
	for k, name := range mockFieldKnobs {
		if !slices.Contains(names, name) || !knob.IsGPUKnob(name) {
			t.Errorf("%s: %q is no GPU knob", k, name)
		}
	}
	// Every knob's files are snapshot keys of that knob.
	for _, d := range knob.Defs() {
		for _, w := range d.Writes {
			key := strings.ReplaceAll(strings.ReplaceAll(w, "<N>", "12"), "<*>", "x.service")
			if !tuned(key) || KnobOf(key) != d.Name {
				t.Errorf("%s writes %s, but KnobOf(%s) = %q", d.Name, w, key, KnobOf(key))
			}
		}
	}
}

// writeFiles writes root-relative files under a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTakeLayouts: cpufreq as sysfs has it (cpu<N>/cpufreq links to
// policy folders) and as a fixture may have it (cpu<N>/cpufreq folders),
// each file once; temporary files left out; mock settings by field.
func TestTakeLayouts(t *testing.T) {
	const mock = "run/gpuprep-mock/GPU-0.json"
	dir := writeFiles(t, map[string]string{
		"sys/devices/system/cpu/cpufreq/policy0/scaling_governor":                   "powersave\n",
		"sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference":      "balance_performance\n",
		"sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq":                   "3800000\n",
		"sys/devices/system/cpu/cpufreq/policy0/.scaling_governor.gpuprep-tmp-12-3": "perf",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor":                      "performance\n",
		"sys/devices/system/cpu/cpu1/cpuidle/state2/disable":                        "1\n",
		"sys/devices/system/cpu/cpu1/cpuidle/state2/latency":                        "170\n",
		"sys/kernel/mm/transparent_hugepage/enabled":                                "always [madvise] never\n",
		"proc/sys/vm/swappiness":                                                    "60\n",
		"proc/sys/vm/.swappiness.gpuprep-tmp-9-1":                                   "10",
		mock:                              `{"persistence":1,"compute_mode":0,"app_sm_mhz":1755,"app_mem_mhz":2619,"locked_min_mhz":0,"locked_max_mhz":0,"power_mw":700000,"ecc_pending":1}`,
		"run/gpuprep-mock/GPU-1.json":     "not json",
		"run/gpuprep-mock/GPU-0.json.tmp": "{}",
		"run/unrelated.json":              "{}",
	})
	// cpu0's is sysfs's link to its policy.
	if err := os.MkdirAll(filepath.Join(dir, "sys/devices/system/cpu/cpu0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../cpufreq/policy0", filepath.Join(dir, "sys/devices/system/cpu/cpu0/cpufreq")); err != nil {
		t.Fatal(err)
	}
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Snapshot{
		"sys/devices/system/cpu/cpufreq/policy0/scaling_governor":              "powersave",
		"sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference": "balance_performance",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor":                 "performance",
		"sys/devices/system/cpu/cpu1/cpuidle/state2/disable":                   "1",
		"sys/kernel/mm/transparent_hugepage/enabled":                           "always [madvise] never",
		"proc/sys/vm/swappiness":                                               "60",
		mock + "#persistence":                                                  "1",
		mock + "#compute_mode":                                                 "0",
		mock + "#app_sm_mhz":                                                   "1755",
		mock + "#app_mem_mhz":                                                  "2619",
		mock + "#locked_min_mhz":                                               "0",
		mock + "#locked_max_mhz":                                               "0",
		mock + "#power_mw":                                                     "700000",
		mock + "#ecc_pending":                                                  "1",
		"run/gpuprep-mock/GPU-1.json":                                          "not json",
	}
	if d := s.Diff(want, 100); len(d) != 0 {
		t.Errorf("snapshot differs from the expected one: %v", d)
	}
	if len(s) != len(want) {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Errorf("snapshot has %d keys, want %d: %v", len(s), len(want), keys)
	}

	// Diff names a changed field and a new file, and leaves out new
	// files under run/.
	s2 := Snapshot{}
	for k, v := range s {
		s2[k] = v
	}
	s2[mock+"#power_mw"] = "500000"
	s2["proc/sys/vm/dirty_ratio"] = "20"
	s2["run/gpuprep-mock/GPU-2.json#power_mw"] = "1"
	delete(s2, "sys/devices/system/cpu/cpu1/cpuidle/state2/disable")
	d := s2.Diff(s, 10)
	wantDiff := []string{
		"proc/sys/vm/dirty_ratio: new file",
		mock + "#power_mw: 700000 -> 500000",
		"sys/devices/system/cpu/cpu1/cpuidle/state2/disable: missing",
	}
	if !slices.Equal(d, wantDiff) {
		t.Errorf("Diff = %q, want %q", d, wantDiff)
	}
	if d := s2.Diff(s, 2); len(d) != 3 || d[2] != "..." {
		t.Errorf("Diff(max 2) = %q", d)
	}
}

// TestCoversNodeKnobs: on every fixture root, each node knob that reads
// has a file in the snapshot.
func TestCoversNodeKnobs(t *testing.T) {
	t.Parallel()
	for _, name := range testroot.Names() {
		t.Run(name, func(t *testing.T) {
			root := testroot.Shared(t, name)
			s, err := Take(root)
			if err != nil {
				t.Fatal(err)
			}
			have := knobsIn(s)
			for _, k := range knob.NodeKnobs(host.NewRoot(root), cpuset.Set{}) {
				if _, err := k.Read(); err != nil {
					t.Log(err)
					continue
				}
				if have[k.ID().Name] == 0 {
					t.Errorf("%s reads on %s, but the snapshot holds none of its files", k.ID(), name)
				}
			}
		})
	}
}

// knobsIn counts a snapshot's keys by knob.
func knobsIn(s Snapshot) map[string]int {
	n := map[string]int{}
	for k := range s {
		n[KnobOf(k)]++
	}
	return n
}

// dgxh100 is a writable dgxh100 fixture root with its mock GPU backend and
// the GPUs' saved settings made (as a first prolog would: the mock saves a
// GPU's settings on its first change, and a snapshot sees them from then
// on): every GPU knob's value applied as it reads.
func dgxh100(t *testing.T) (string, []knob.Knob) {
	t.Helper()
	root := testroot.Unpack(t, "dgxh100")
	r := host.NewRoot(root)
	// The fixture's cgroup v2 tree has no units: add services, slurmd and
	// a job, for housekeeping_cpus.
	for _, cg := range []string{"system.slice/cron.service", "system.slice/slurmd.service", "system.slice/slurmstepd.scope/job_1", "user.slice", "init.scope"} {
		for _, f := range []string{"cgroup.controllers", "cpuset.cpus"} {
			p := filepath.Join(root, "sys/fs/cgroup", cg, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(map[bool]string{true: "cpuset cpu memory"}[f == "cgroup.controllers"]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The capture has no interrupts: give it a node's (test/mkirqs.sh),
	// for irq_affinity.
	mk := exec.Command("bash", filepath.Join(testroot.Module(t), "test/mkirqs.sh"), root, "2", "2")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("test/mkirqs.sh: %v\n%s", err, out)
	}
	backend, err := gpu.Open("mock:dgxh100", r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	devs, err := backend.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) == 0 {
		t.Fatal("mock:dgxh100 has no GPU")
	}
	knobs := knob.Catalog(knob.Env{Root: r, GPU: backend, GPUs: devs, Isolation: isolate.Options{Writer: cgwriter.Writer{}}})
	for _, k := range knobs {
		if !knob.IsGPUKnob(k.ID().Name) || notSnapshotted[k.ID().Name] != "" {
			continue
		}
		v, err := k.Read()
		if err != nil {
			t.Fatalf("%s: %v", k.ID(), err)
		}
		if err := k.Apply(v); err != nil {
			t.Fatalf("%s: Apply(%q): %v", k.ID(), v, err)
		}
	}
	return root, knobs
}

// notSnapshotted are the knobs a snapshot cannot hold, with why.
var notSnapshotted = map[string]string{
	// Its state is a process (the MPS control daemon) and its directories
	// under /run/gpuprep/mps, not a setting of the node's files or of the
	// mock GPU; lib/knob and lib/hook test its start, sharing, drift and
	// stop, lib/mps its quit-then-kill.
	"mps": "a daemon process, not a file",
}

// covers reports whether s holds a key of k: of its knob name, and for a
// GPU's knob, of its GPU's saved settings.
func covers(s Snapshot, keys []string, k knob.Knob) bool {
	uuid, gpuScope := strings.CutPrefix(k.ID().Scope, "gpu:")
	for _, key := range keys {
		if KnobOf(key) == k.ID().Name && (!gpuScope || strings.Contains(key, "/"+uuid+".json#")) {
			return true
		}
	}
	return false
}

// TestCoversEveryKnob: on the dgxh100 fixture with its mock GPUs, every
// knob of the catalog that reads has a key in the snapshot; and applying a
// different value to each knob changes a key of that knob.
func TestCoversEveryKnob(t *testing.T) {
	t.Parallel() // unpacking the root takes most of its time
	root, knobs := dgxh100(t)
	base, err := Take(root)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(base))
	for k := range base {
		keys = append(keys, k)
	}
	checked := map[string]bool{}
	for _, k := range knobs {
		if _, err := k.Read(); err != nil {
			t.Log(err)
			continue
		}
		checked[k.ID().Name] = true
		if !covers(base, keys, k) {
			t.Errorf("%s reads, but the snapshot holds none of its files", k.ID())
		}
	}
	// The dgxh100 fixture has every knob: none may drop out unseen.
	for _, name := range knob.Names() {
		if !checked[name] && notSnapshotted[name] == "" {
			t.Errorf("%s does not read on dgxh100", name)
		}
	}

	// Another value for each knob.
	applied := map[knob.ID]bool{}
	for _, k := range knobs {
		cur, err := k.Read()
		if err != nil {
			continue
		}
		if notSnapshotted[k.ID().Name] != "" {
			continue
		}
		v, ok := otherValue(t, k, cur)
		if !ok {
			t.Errorf("%s: no other value to apply (reads %q)", k.ID(), cur)
			continue
		}
		if err := k.Apply(v); err != nil {
			t.Fatalf("%s: Apply(%q): %v", k.ID(), v, err)
		}
		applied[k.ID()] = true
	}
	after, err := Take(root)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, d := range after.Diff(base, len(base)+len(after)) {
		key, _, _ := strings.Cut(d, ": ")
		changed = append(changed, key)
	}
	for _, k := range knobs {
		if applied[k.ID()] && !covers(after, changed, k) {
			t.Errorf("%s was applied, but no key of it changed", k.ID())
		}
	}
	// And every key that changed is some applied knob's.
	for _, key := range changed {
		if KnobOf(key) == "" {
			t.Errorf("%s changed, but belongs to no knob", key)
		}
	}
}

// otherValue is a value unlike cur for k, through Desired as a profile's
// setting would go.
func otherValue(t *testing.T, k knob.Knob, cur knob.Value) (knob.Value, bool) {
	t.Helper()
	var settings []string
	switch k.ID().Name {
	case "cpu_governor":
		settings = []string{"performance", "powersave", "schedutil", "ondemand"}
	case "energy_performance_preference":
		settings = []string{"performance", "power", "balance_power", "balance_performance"}
	case "cstate_max_latency_us":
		settings = []string{"0", "2", "10", "1000000"}
	case "thp_enabled", "thp_defrag":
		settings = []string{"always", "never", "madvise"}
	case "vm_swappiness", "vm_dirty_ratio", "vm_dirty_background_ratio", "vm_zone_reclaim_mode", "kernel_numa_balancing":
		settings = []string{"1", "2", "0", "3"}
	case "gpu_persistence", "gpu_accounting":
		settings = []string{"off", "on"}
	case "gpu_compute_mode":
		settings = []string{"exclusive_process", "prohibited", "default"}
	case "gpu_app_clocks_mhz":
		mem, _, _ := strings.Cut(string(cur), ",")
		settings = []string{mem + ",1410", mem + ",1200"}
	case "gpu_locked_clocks_mhz":
		settings = []string{"1200,1800"}
	case "gpu_power_limit_w":
		settings = []string{"500", "400"}
	case "housekeeping_cpus":
		settings = []string{"0-3", "0-1"}
	case "irq_affinity":
		settings = []string{"on"}
	}
	for _, s := range settings {
		v, err := k.Desired(s)
		if err != nil {
			continue
		}
		if v != cur {
			return v, true
		}
	}
	return "", false
}
