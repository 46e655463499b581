package fixturegen

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/nodeshape"
)

// small is a 2-socket, 3-core, 2-thread shape for numbering tests.
func small(numbering string) nodeshape.Shape {
	return nodeshape.Shape{Name: "small", Hostname: "small", CPUVendor: "GenuineIntel", CPUModel: "x",
		Sockets: 2, CoresPerSocket: 3, ThreadsPerCore: 2, MemoryMiBPerNode: 1024, Numbering: numbering}
}

// TestNumberingFormulas: each CPU id has the socket, core and thread the
// numbering's formula gives, and the ids are exactly 0..n-1.
func TestNumberingFormulas(t *testing.T) {
	// want[id] = "socket core thread"
	cases := map[string][]string{
		"": { // split: t*S*C + s*C + c
			"0 0 0", "0 1 0", "0 2 0", "1 0 0", "1 1 0", "1 2 0",
			"0 0 1", "0 1 1", "0 2 1", "1 0 1", "1 1 1", "1 2 1",
		},
		"socket-interleaved": { // t*S*C + c*S + s
			"0 0 0", "1 0 0", "0 1 0", "1 1 0", "0 2 0", "1 2 0",
			"0 0 1", "1 0 1", "0 1 1", "1 1 1", "0 2 1", "1 2 1",
		},
		"compact": { // s*C*T + c*T + t
			"0 0 0", "0 0 1", "0 1 0", "0 1 1", "0 2 0", "0 2 1",
			"1 0 0", "1 0 1", "1 1 0", "1 1 1", "1 2 0", "1 2 1",
		},
	}
	for numbering, want := range cases {
		l, err := newLayout(small(numbering))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.CPUs) != len(want) {
			t.Fatalf("%q: %d CPUs, want %d", numbering, len(l.CPUs), len(want))
		}
		for id, c := range l.CPUs {
			got := strings.Join([]string{strconv.Itoa(c.Socket), strconv.Itoa(c.Core), strconv.Itoa(c.Thread)}, " ")
			if c.ID != id || got != want[id] {
				t.Errorf("%q: cpu%d (id %d) is %s, want %s", numbering, id, c.ID, got, want[id])
			}
		}
	}
}

// TestNUMAInterleave: with NUMAInterleave core c of a socket is in its
// node c % NUMAPerSocket; without, in c / (C/NUMAPerSocket).
func TestNUMAInterleave(t *testing.T) {
	s := nodeshape.Shape{Name: "snc", Hostname: "snc", CPUVendor: "GenuineIntel", CPUModel: "x",
		Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 1, NUMAPerSocket: 2, MemoryMiBPerNode: 1024}
	for _, c := range []struct {
		interleave bool
		want       []string // node cpulists, split numbering
	}{
		{false, []string{"0-1", "2-3", "4-5", "6-7"}},
		{true, []string{"0,2", "1,3", "4,6", "5,7"}},
	} {
		s.NUMAInterleave = c.interleave
		l, err := newLayout(s)
		if err != nil {
			t.Fatal(err)
		}
		for n, want := range c.want {
			if got := cpuList(l.nodeCPUs(n)); got != want {
				t.Errorf("interleave %v: node %d cpus %s, want %s", c.interleave, n, got, want)
			}
		}
	}
}

// TestTopologyFiles pins the files the topology features produce.
func TestTopologyFiles(t *testing.T) {
	cases := map[string]map[string]string{
		"snc2xeon": {
			"sys/devices/system/node/node0/cpulist":                     "0,4,8,12,16,20,24,28,32,36,40,44,48,52,56,60,64,68,72,76",
			"sys/devices/system/node/node3/cpulist":                     "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59,63,67,71,75,79",
			"sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0,40",
			"sys/devices/system/cpu/cpu10/topology/core_id":             "8", // core index 5
			"sys/devices/system/cpu/cpu79/topology/core_id":             "28",
			"sys/devices/system/cpu/cpu1/topology/physical_package_id":  "1",
			"sys/devices/system/cpu/cpu0/topology/package_cpus_list":    "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,46,48,50,52,54,56,58,60,62,64,66,68,70,72,74,76,78",
			"sys/devices/system/cpu/cpu10/cache/index2/shared_cpu_list": "10,50",
			"sys/bus/pci/devices/0000:3b:00.0/numa_node":                "1",
			"sys/bus/pci/devices/0000:3b:00.0/local_cpulist":            "2,6,10,14,18,22,26,30,34,38,42,46,50,54,58,62,66,70,74,78",
		},
		"bulldozer": {
			"sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0-1",
			"sys/devices/system/cpu/cpu0/topology/core_cpus_list":       "0-1",
			"sys/devices/system/cpu/cpu0/topology/core_id":              "0",
			"sys/devices/system/cpu/cpu1/topology/core_id":              "1",
			"sys/devices/system/cpu/cpu17/topology/core_id":             "1",
			"sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list":  "0",   // L1d
			"sys/devices/system/cpu/cpu0/cache/index1/shared_cpu_list":  "0-1", // L1i
			"sys/devices/system/cpu/cpu0/cache/index2/shared_cpu_list":  "0-1", // L2
			"sys/devices/system/cpu/cpu9/cache/index3/shared_cpu_list":  "8-15",
			"sys/devices/system/node/node2/cpulist":                     "16-23",
			"sys/bus/pci/devices/0000:43:00.0/local_cpulist":            "16-23",
		},
		"altra": {
			"sys/devices/system/cpu/online":                          "0-79",
			"sys/devices/system/cpu/cpu0/topology/cluster_cpus_list": "0-1",
			"sys/devices/system/cpu/cpu3/topology/cluster_id":        "1",
			"sys/devices/system/cpu/cpu79/topology/cluster_id":       "39",
			"sys/devices/system/cpu/cpu79/topology/core_cpus_list":   "79",
		},
		"thunderx2": {
			"sys/devices/system/cpu/cpu0/topology/physical_package_id":   "-1",
			"sys/devices/system/cpu/cpu223/topology/physical_package_id": "-1",
			"sys/devices/system/cpu/cpu5/topology/thread_siblings_list":  "4-7",
			"sys/devices/system/cpu/cpu5/topology/core_id":               "1",
			"sys/devices/system/cpu/cpu0/topology/package_cpus_list":     "0-111",
			"sys/devices/system/cpu/cpu112/topology/core_siblings_list":  "112-223",
			"sys/devices/system/node/node1/cpulist":                      "112-223",
			"sys/bus/pci/devices/0002:01:00.0/local_cpulist":             "112-223",
		},
		"oldkernel": {
			"sys/devices/system/cpu/possible":                           "0-15",
			"sys/devices/system/cpu/present":                            "0-15",
			"sys/devices/system/cpu/offline":                            "7,15",
			"sys/devices/system/cpu/cpu7/online":                        "0",
			"sys/devices/system/cpu/cpu15/online":                       "0",
			"sys/devices/system/cpu/cpu6/online":                        "1",
			"sys/devices/system/cpu/cpu6/topology/thread_siblings_list": "6,14",
			"sys/devices/system/cpu/cpu0/topology/core_siblings_list":   "0-6,8-14",
			"sys/devices/system/cpu/cpu0/topology/core_siblings":        "7f7f",
			"sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list":  "0-6,8-14",
			"sys/devices/system/node/node0/cpulist":                     "0-6,8-14",
			"sys/devices/system/node/node0/cpumap":                      "7f7f",
			"sys/bus/pci/devices/0000:02:00.0/local_cpulist":            "0-6,8-14",
			"sys/bus/pci/devices/0000:02:00.0/local_cpus":               "7f7f",
			"sys/fs/cgroup/cpuset.cpus.effective":                       "0-6,8-14",
		},
	}
	for name, files := range cases {
		dir, _ := writeRoot(t, name)
		for p, want := range files {
			got := read(t, dir, p)
			if !strings.HasPrefix(got, want+"\n") {
				t.Errorf("%s %s: %q, want %q", name, p, got, want)
			}
		}
	}
}

// TestCPUInfoCounts: /proc/cpuinfo lists online CPUs only, and its
// siblings/cpu cores follow compute units and offline CPUs.
func TestCPUInfoCounts(t *testing.T) {
	for _, c := range []struct {
		name               string
		procs              int
		siblings, cpuCores string
	}{
		{"dgxh100", 224, "112", "56"},
		{"bulldozer", 32, "16", "8"},
		{"oldkernel", 14, "14", "7"},
		{"snc2xeon", 80, "40", "20"},
	} {
		dir, _ := writeRoot(t, c.name)
		info := read(t, dir, "proc/cpuinfo")
		if n := strings.Count(info, "processor\t:"); n != c.procs {
			t.Errorf("%s: %d processors, want %d", c.name, n, c.procs)
		}
		if !strings.Contains(info, "siblings\t: "+c.siblings+"\n") || strings.Count(info, "siblings\t: "+c.siblings+"\n") != c.procs {
			t.Errorf("%s: siblings not %s on every CPU", c.name, c.siblings)
		}
		if strings.Count(info, "cpu cores\t: "+c.cpuCores+"\n") != c.procs {
			t.Errorf("%s: cpu cores not %s on every CPU", c.name, c.cpuCores)
		}
	}
	dir, _ := writeRoot(t, "oldkernel")
	if info := read(t, dir, "proc/cpuinfo"); strings.Contains(info, "processor\t: 7\n") || strings.Contains(info, "processor\t: 15\n") {
		t.Error("oldkernel: offline CPUs in /proc/cpuinfo")
	}
	dir, _ = writeRoot(t, "snc2xeon")
	if info := read(t, dir, "proc/cpuinfo"); !strings.Contains(info, "processor\t: 10\nvendor_id") ||
		!strings.Contains(strings.SplitN(strings.SplitN(info, "processor\t: 10\n", 2)[1], "processor", 2)[0], "core id\t\t: 8\n") {
		t.Error("snc2xeon: cpu10's cpuinfo core id is not its sparse core_id 8")
	}
}

// isListFile tells the files ListNUL applies to.
func isListFile(p string) bool {
	base := filepath.Base(p)
	switch {
	case strings.HasSuffix(base, "_list"), base == "cpulist", base == "local_cpulist":
		return true
	case strings.HasSuffix(p, "system/cpu/"+base) && (base == "online" || base == "possible" || base == "present" || base == "offline" || base == "isolated"):
		return true
	case strings.HasSuffix(p, "system/node/"+base) && (base == "online" || base == "possible" || strings.HasPrefix(base, "has_")):
		return true
	}
	return false
}

// TestListNUL: on altra every list file ends in "\n\x00" and nothing else
// holds a NUL (besides binary PCI config space); other shapes write no NUL.
func TestListNUL(t *testing.T) {
	for _, name := range []string{"altra", "gh200", "oldkernel"} {
		dir, s := writeRoot(t, name)
		lists := 0
		err := filepath.WalkDir(filepath.Join(dir, "sys"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || filepath.Base(p) == "config" {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if isListFile(rel) {
				lists++
				if s.ListNUL && !bytes.HasSuffix(b, []byte("\n\x00")) {
					t.Errorf("%s %s: %q does not end in \\n\\x00", name, rel, b)
				}
				if s.ListNUL && bytes.Count(b, []byte{0}) != 1 {
					t.Errorf("%s %s: %q has more than one NUL", name, rel, b)
				}
				if !s.ListNUL && bytes.IndexByte(b, 0) >= 0 {
					t.Errorf("%s %s: %q has a NUL", name, rel, b)
				}
				return nil
			}
			if bytes.IndexByte(b, 0) >= 0 {
				t.Errorf("%s %s: NUL in a file that is not a list: %q", name, rel, b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if lists < 10 {
			t.Errorf("%s: only %d list files", name, lists)
		}
	}
	dir, _ := writeRoot(t, "altra")
	for _, p := range []string{"sys/devices/system/cpu/online", "sys/devices/system/cpu/possible",
		"sys/devices/system/cpu/cpu3/topology/cluster_cpus_list", "sys/devices/system/node/node0/cpulist",
		"sys/devices/system/node/has_cpu", "sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list",
		"sys/bus/pci/devices/0004:01:00.0/local_cpulist"} {
		if got := read(t, dir, p); !strings.HasSuffix(got, "\n\x00") {
			t.Errorf("altra %s: %q", p, got)
		}
	}
	if got := read(t, dir, "sys/devices/system/node/node0/cpumap"); strings.Contains(got, "\x00") {
		t.Errorf("altra node0/cpumap (a mask) %q has a NUL", got)
	}
}

// TestOldKernelFiles: no cpu/online, only the 3.10 topology files, and the
// offline CPUs have neither topology, cache, cpufreq nor cpuidle.
func TestOldKernelFiles(t *testing.T) {
	dir, _ := writeRoot(t, "oldkernel")
	cpuDir := filepath.Join(dir, "sys/devices/system/cpu")
	if _, err := os.Lstat(filepath.Join(cpuDir, "online")); err == nil {
		t.Error("oldkernel has cpu/online")
	}
	ents, err := os.ReadDir(filepath.Join(cpuDir, "cpu0/topology"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := "core_id core_siblings core_siblings_list physical_package_id thread_siblings thread_siblings_list"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("cpu0/topology: %s, want %s", got, want)
	}
	for _, id := range []string{"7", "15"} {
		for _, p := range []string{"cpu" + id + "/topology", "cpu" + id + "/cache", "cpu" + id + "/cpufreq",
			"cpu" + id + "/cpuidle", "cpufreq/policy" + id} {
			if _, err := os.Lstat(filepath.Join(cpuDir, p)); err == nil {
				t.Errorf("offline CPU %s: %s exists", id, p)
			}
		}
	}
	for _, p := range []string{"cpu6/topology/core_id", "cpu6/cache/index0/size", "cpufreq/policy6/scaling_driver",
		"cpu6/cpuidle/state0/name", "cpu0/topology/thread_siblings"} {
		if _, err := os.Stat(filepath.Join(cpuDir, p)); err != nil {
			t.Errorf("online CPU: %v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "sys/devices/system/node/node0/cpu7")); err == nil {
		t.Error("node0 links offline cpu7")
	}
	// Modern shapes keep every file.
	mod, _ := writeRoot(t, "dgxh100")
	for _, p := range []string{"online", "cpu0/topology/core_cpus_list", "cpu0/topology/package_cpus",
		"cpu0/topology/die_cpus_list", "cpu0/topology/cluster_id"} {
		if _, err := os.Stat(filepath.Join(mod, "sys/devices/system/cpu", p)); err != nil {
			t.Errorf("dgxh100: %v", err)
		}
	}
}

func TestValidateRejectsTopology(t *testing.T) {
	base, _ := nodeshape.ByName("dgxa100") // 2 x 64 cores x 2 threads
	bad := map[string]func(*nodeshape.Shape){
		"unknown numbering":      func(s *nodeshape.Shape) { s.Numbering = "scatter" },
		"CoreIDs too short":      func(s *nodeshape.Shape) { s.CoreIDs = []int{0, 1, 2} },
		"CoreIDs duplicate":      func(s *nodeshape.Shape) { s.CoreIDs = make([]int, 64) },
		"CoreIDs negative":       func(s *nodeshape.Shape) { s.CoreIDs = seq(-1, 64) },
		"compute unit with SMT":  func(s *nodeshape.Shape) { s.ComputeUnitCores = 2 },
		"compute unit uneven":    func(s *nodeshape.Shape) { s.ThreadsPerCore, s.ComputeUnitCores = 1, 3 },
		"cluster uneven":         func(s *nodeshape.Shape) { s.ClusterCores = 5 },
		"offline CPU too high":   func(s *nodeshape.Shape) { s.OfflineCPUs = []int{256} },
		"offline CPU negative":   func(s *nodeshape.Shape) { s.OfflineCPUs = []int{-1} },
		"offline CPU duplicate":  func(s *nodeshape.Shape) { s.OfflineCPUs = []int{3, 3} },
		"every CPU offline":      func(s *nodeshape.Shape) { s.OfflineCPUs = seq(0, 256) },
		"negative compute unit":  func(s *nodeshape.Shape) { s.ComputeUnitCores = -2 },
		"negative cluster cores": func(s *nodeshape.Shape) { s.ClusterCores = -1 },
	}
	for name, mutate := range bad {
		s := base
		mutate(&s)
		err := validate(s)
		if err == nil {
			t.Errorf("%s: validate accepted the shape", name)
			continue
		}
		if !strings.Contains(err.Error(), "dgxa100") {
			t.Errorf("%s: error %q does not name the shape", name, err)
		}
	}
	ok := map[string]func(*nodeshape.Shape){
		"split by name":      func(s *nodeshape.Shape) { s.Numbering = "split" },
		"sparse CoreIDs":     func(s *nodeshape.Shape) { s.CoreIDs = seq(100, 64) },
		"cluster of 4":       func(s *nodeshape.Shape) { s.ClusterCores = 4 },
		"compute unit, SMT1": func(s *nodeshape.Shape) { s.ThreadsPerCore, s.ComputeUnitCores = 1, 2 },
		"some CPUs offline":  func(s *nodeshape.Shape) { s.OfflineCPUs = []int{5, 255} },
	}
	for name, mutate := range ok {
		s := base
		mutate(&s)
		if err := validate(s); err != nil {
			t.Errorf("%s: validate rejected the shape: %v", name, err)
		}
	}
}

// seq is n consecutive ints from first.
func seq(first, n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = first + i
	}
	return r
}
