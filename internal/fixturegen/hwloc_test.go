package fixturegen

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/nodeshape"
)

// requireLstopo returns lstopo-no-graphics's path; without it the test
// skips, except in CI (CI=true) where the missing oracle is a failure.
func requireLstopo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("lstopo-no-graphics")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("lstopo-no-graphics (Debian package hwloc) is missing")
	}
	t.Skip("lstopo-no-graphics not installed")
	return ""
}

// hwlocHidesGPUMemory says whether the lstopo-no-graphics on PATH (this
// machine's, or a release's under test/matrix/oracles.sh) is older than
// hwloc 2.11, the first that keeps an NVIDIA GPU's memory NUMA node by
// default. It reads `lstopo-no-graphics --version` ("lstopo-no-graphics
// 2.9.0").
func hwlocHidesGPUMemory(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command(requireLstopo(t), "--version").Output()
	if err != nil {
		t.Fatalf("lstopo-no-graphics --version: %v", err)
	}
	f := strings.Fields(string(out))
	var major, minor int
	if len(f) < 2 {
		t.Fatalf("lstopo-no-graphics --version printed %q", out)
	}
	if _, err := fmt.Sscanf(f[len(f)-1], "%d.%d", &major, &minor); err != nil {
		t.Fatalf("lstopo-no-graphics --version printed %q: %v", out, err)
	}
	return major < 2 || (major == 2 && minor < 11)
}

// hwObj is one object of lstopo's XML.
type hwObj struct {
	Type     string  `xml:"type,attr"`
	Subtype  string  `xml:"subtype,attr"`
	OSIndex  *int    `xml:"os_index,attr"`
	Name     string  `xml:"name,attr"`
	CPUSet   string  `xml:"cpuset,attr"`
	BusID    string  `xml:"pci_busid,attr"`
	PCIType  string  `xml:"pci_type,attr"`
	LocalMem uint64  `xml:"local_memory,attr"`
	Children []hwObj `xml:"object"`
	parent   *hwObj
}

type hwTopo struct {
	Objects []hwObj `xml:"object"`
}

// lstopo reads root through hwloc's Linux backend. The x86 backend is
// disabled: hwloc 2.9 still runs it under HWLOC_FSROOT and annotates the
// fixture with the build machine's CPUID (CPUModel, CPUVendor).
func lstopo(t *testing.T, root string, env ...string) []*hwObj {
	t.Helper()
	bin := requireLstopo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--of", "xml", "--whole-io")
	cmd.Env = append([]string{"HWLOC_FSROOT=" + root, "HWLOC_COMPONENTS=-x86", "PATH=/usr/bin:/bin"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lstopo: %v: %s", err, errb.String())
	}
	if s := strings.TrimSpace(errb.String()); s != "" {
		t.Errorf("lstopo complained: %s", s)
	}
	var top hwTopo
	if err := xml.Unmarshal(out.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	var all []*hwObj
	var walk func(o *hwObj, parent *hwObj)
	walk = func(o *hwObj, parent *hwObj) {
		o.parent = parent
		all = append(all, o)
		for i := range o.Children {
			walk(&o.Children[i], o)
		}
	}
	for i := range top.Objects {
		walk(&top.Objects[i], nil)
	}
	return all
}

func ofType(all []*hwObj, typ string) []*hwObj {
	var r []*hwObj
	for _, o := range all {
		if o.Type == typ {
			r = append(r, o)
		}
	}
	return r
}

// hwSet reads hwloc's bitmap ("0x000000ff,0xffffffff") into sorted ids.
func hwSet(t *testing.T, s string) []int {
	t.Helper()
	words := strings.Split(s, ",")
	var ids []int
	for i, w := range words {
		w = strings.TrimPrefix(w, "0x")
		if w == "" { // hwloc elides all-zero words: "0xff,,0x1"
			w = "0"
		}
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			t.Fatalf("hwloc set %q: %v", s, err)
		}
		base := 32 * (len(words) - 1 - i)
		for b := 0; b < 32; b++ {
			if v&(1<<b) != 0 {
				ids = append(ids, base+b)
			}
		}
	}
	sort.Ints(ids)
	return ids
}

// cpuParent is the nearest ancestor of an I/O object that has a cpuset.
func cpuParent(o *hwObj) *hwObj {
	for p := o.parent; p != nil; p = p.parent {
		if p.CPUSet != "" {
			return p
		}
	}
	return nil
}

func TestHwlocReadsShapes(t *testing.T) {
	requireLstopo(t)
	for _, s := range nodeshape.All() {
		t.Run(s.Name, func(t *testing.T) {
			dir := sharedRoot(t, s.Name)
			l, err := newLayout(s)
			if err != nil {
				t.Fatal(err)
			}
			// proc/hwloc-nofile-info tells hwloc the architecture, so it
			// splits AMD compute units (family 21) into cores as on x86.
			all := lstopo(t, dir)
			checkCPUs(t, s, l, all)
			if want, ok := hwlocPackages[s.Name]; ok {
				checkPackages(t, all, want)
			}
			if want, ok := hwlocNUMA[s.Name]; ok {
				for _, n := range ofType(all, "NUMANode") {
					if got := cpuList(hwSet(t, n.CPUSet)); n.OSIndex != nil && got != want[*n.OSIndex] {
						t.Errorf("hwloc NUMA node %d: cpus %s, want %s", *n.OSIndex, got, want[*n.OSIndex])
					}
				}
			}

			// hwloc before 2.11 drops the NUMA node named by an NVIDIA
			// GPU's numa_status (its memory) unless told to keep it;
			// 2.11 and later keep it (hwloc's NEWS for 2.11.0: "Don't
			// hide the GPU NUMA node on NVIDIA Grace Hopper").
			dropped := map[int]bool{}
			for _, g := range s.GPUs {
				if len(g.MemoryNUMANodes) > 0 && hwlocHidesGPUMemory(t) {
					dropped[g.MemoryNUMANodes[0]] = true
				}
			}
			checkNUMA(t, l, all, dropped)
			if len(dropped) > 0 {
				checkNUMA(t, l, lstopo(t, dir, "HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1"), nil)
			}
			checkIO(t, s, l, all)
		})
	}
}

// hwlocShape is what hwloc must find in each package: cores, and PUs per
// core.
type hwlocShape struct{ Packages, Cores, PUs int }

// hwlocPackages pins, for the CPU-topology shapes, the packages hwloc sees,
// independently of the layout code.
var hwlocPackages = map[string]hwlocShape{
	"snc2xeon":  {2, 20, 2},
	"bulldozer": {2, 16, 1}, // a compute unit's cores are cores of their own
	"altra":     {1, 80, 1},
	"thunderx2": {2, 28, 4}, // physical_package_id -1: masks tell them apart
	"oldkernel": {1, 7, 2},  // core 7 (CPUs 7 and 15) offline
}

// hwlocNUMA pins NUMA node cpusets hwloc must read, written out by hand.
var hwlocNUMA = map[string]map[int]string{
	"snc2xeon": {
		0: "0,4,8,12,16,20,24,28,32,36,40,44,48,52,56,60,64,68,72,76",
		1: "2,6,10,14,18,22,26,30,34,38,42,46,50,54,58,62,66,70,74,78",
		2: "1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77",
		3: "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59,63,67,71,75,79",
	},
	"bulldozer": {0: "0-7", 1: "8-15", 2: "16-23", 3: "24-31"},
	"thunderx2": {0: "0-111", 1: "112-223"},
	"oldkernel": {0: "0-6,8-14"},
}

// checkPackages counts hwloc's packages, the cores in each and the PUs of
// each core.
func checkPackages(t *testing.T, all []*hwObj, want hwlocShape) {
	t.Helper()
	pkgs := ofType(all, "Package")
	if len(pkgs) != want.Packages {
		t.Fatalf("hwloc packages: %d, want %d", len(pkgs), want.Packages)
	}
	for i, p := range pkgs {
		in := map[int]bool{}
		for _, id := range hwSet(t, p.CPUSet) {
			in[id] = true
		}
		cores := 0
		for _, c := range ofType(all, "Core") {
			ids := hwSet(t, c.CPUSet)
			if len(ids) == 0 || !in[ids[0]] {
				continue
			}
			cores++
			if len(ids) != want.PUs {
				t.Errorf("Package L#%d: core %s has %d PUs, want %d", i, cpuList(ids), len(ids), want.PUs)
			}
		}
		if cores != want.Cores {
			t.Errorf("Package L#%d: %d cores, want %d", i, cores, want.Cores)
		}
	}
}

func checkCPUs(t *testing.T, s nodeshape.Shape, l *layout, all []*hwObj) {
	t.Helper()
	pkgs := ofType(all, "Package")
	if len(pkgs) != s.Sockets {
		t.Fatalf("hwloc packages: %d, want %d", len(pkgs), s.Sockets)
	}
	// hwloc orders packages by their first CPU.
	var wantPkgs [][]int
	for so := 0; so < s.Sockets; so++ {
		wantPkgs = append(wantPkgs, l.socketCPUs(so))
	}
	sort.Slice(wantPkgs, func(i, j int) bool { return wantPkgs[i][0] < wantPkgs[j][0] })
	for i, p := range pkgs {
		if got, want := hwSet(t, p.CPUSet), wantPkgs[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("Package L#%d: cpus %s, want %s", i, cpuList(got), cpuList(want))
		}
	}
	// One hwloc core per core of the shape with an online thread (on
	// Bulldozer too: each core of a compute unit), holding its online
	// threads.
	var want, got []string
	for so := 0; so < s.Sockets; so++ {
		for c := 0; c < s.CoresPerSocket; c++ {
			ids := l.cpusWhere(func(o cpu) bool { return o.Socket == so && o.Core == c })
			if len(ids) > 0 {
				want = append(want, cpuList(ids))
			}
		}
	}
	for _, c := range ofType(all, "Core") {
		got = append(got, cpuList(hwSet(t, c.CPUSet)))
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hwloc cores %v, want %v", got, want)
	}
	if pus := ofType(all, "PU"); len(pus) != len(l.onlineCPUs()) {
		t.Errorf("hwloc PUs: %d, want %d", len(pus), len(l.onlineCPUs()))
	}
}

func checkNUMA(t *testing.T, l *layout, all []*hwObj, dropped map[int]bool) {
	t.Helper()
	nodes := ofType(all, "NUMANode")
	got := map[int]*hwObj{}
	for _, n := range nodes {
		if n.OSIndex == nil {
			t.Fatal("NUMA node without os_index")
		}
		got[*n.OSIndex] = n
	}
	want := 0
	for _, n := range l.Nodes {
		if dropped[n.ID] {
			if _, ok := got[n.ID]; ok {
				t.Errorf("NUMA node %d (GPU memory) should be hidden by hwloc", n.ID)
			}
			continue
		}
		want++
		h, ok := got[n.ID]
		if !ok {
			t.Errorf("hwloc misses NUMA node %d", n.ID)
			continue
		}
		if h.LocalMem != uint64(n.MemMiB)<<20 {
			t.Errorf("NUMA node %d: hwloc memory %d, want %d", n.ID, h.LocalMem, uint64(n.MemMiB)<<20)
		}
		if len(n.CPUs) > 0 {
			if c := hwSet(t, h.CPUSet); !reflect.DeepEqual(c, n.CPUs) {
				t.Errorf("NUMA node %d: cpus %s, want %s", n.ID, cpuList(c), cpuList(n.CPUs))
			}
		} else if n.GPU >= 0 && n.MemMiB > 0 && h.Subtype != "GPUMemory" {
			t.Errorf("NUMA node %d: subtype %q, want GPUMemory", n.ID, h.Subtype)
		}
	}
	if len(nodes) != want {
		t.Errorf("hwloc NUMA nodes: %d, want %d", len(nodes), want)
	}
}

func checkIO(t *testing.T, s nodeshape.Shape, l *layout, all []*hwObj) {
	t.Helper()
	pci := map[string]*hwObj{}
	for _, o := range ofType(all, "PCIDev") {
		pci[o.BusID] = o
	}
	osdevs := func(p *hwObj) []string {
		var r []string
		for _, c := range p.Children {
			if c.Type == "OSDev" {
				r = append(r, c.Name)
			}
		}
		return r
	}
	check := func(what, bus string, numa int, vendorDevice string) *hwObj {
		o, ok := pci[bus]
		if !ok {
			t.Errorf("%s %s: hwloc found no such PCI device", what, bus)
			return nil
		}
		if !strings.Contains(o.PCIType, vendorDevice) {
			t.Errorf("%s %s: hwloc pci_type %q, want %s", what, bus, o.PCIType, vendorDevice)
		}
		p := cpuParent(o)
		if p == nil {
			t.Errorf("%s %s: no parent with a cpuset", what, bus)
			return o
		}
		if got, want := hwSet(t, p.CPUSet), l.localCPUs(numa); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: hwloc attaches it to cpus %s, want %s", what, bus, cpuList(got), cpuList(want))
		}
		return o
	}
	for i, g := range s.GPUs {
		check(fmt.Sprintf("GPU %d", i), g.BusID, g.NUMANode, fmt.Sprintf("[10de:%04x]", g.DeviceID))
	}
	for i, n := range s.NICs {
		m := l.nicModel(n).pci
		o := check(fmt.Sprintf("NIC %d", i), n.BusID, n.NUMANode, fmt.Sprintf("[%04x:%04x]", m.Vendor, m.Device))
		if o == nil {
			continue
		}
		names := osdevs(o)
		want := []string{n.NetName}
		if n.IBName != "" {
			want = append(want, n.IBName)
		}
		for _, w := range want {
			found := false
			for _, g := range names {
				found = found || g == w
			}
			if !found {
				t.Errorf("NIC %d %s: hwloc OS devices %v, want %s", i, n.BusID, names, w)
			}
		}
	}
}
