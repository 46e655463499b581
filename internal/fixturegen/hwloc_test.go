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
			all := lstopo(t, dir)
			checkCPUs(t, s, l, all)

			// hwloc drops the NUMA node named by an NVIDIA GPU's
			// numa_status (its memory) unless told to keep it.
			dropped := map[int]bool{}
			for _, g := range s.GPUs {
				if len(g.MemoryNUMANodes) > 0 {
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

func checkCPUs(t *testing.T, s nodeshape.Shape, l *layout, all []*hwObj) {
	t.Helper()
	pkgs := ofType(all, "Package")
	if len(pkgs) != s.Sockets {
		t.Fatalf("hwloc packages: %d, want %d", len(pkgs), s.Sockets)
	}
	for i, p := range pkgs {
		if got, want := hwSet(t, p.CPUSet), l.socketCPUs(i); !reflect.DeepEqual(got, want) {
			t.Errorf("Package L#%d: cpus %s, want %s", i, cpuList(got), cpuList(want))
		}
	}
	cores := ofType(all, "Core")
	if len(cores) != s.Sockets*s.CoresPerSocket {
		t.Fatalf("hwloc cores: %d, want %d", len(cores), s.Sockets*s.CoresPerSocket)
	}
	total := s.Sockets * s.CoresPerSocket
	for i, c := range cores {
		var want []int
		for th := 0; th < s.ThreadsPerCore; th++ {
			want = append(want, th*total+i) // split numbering
		}
		if got := hwSet(t, c.CPUSet); !reflect.DeepEqual(got, want) {
			t.Errorf("Core L#%d: cpus %s, want %s", i, cpuList(got), cpuList(want))
		}
	}
	if pus := ofType(all, "PU"); len(pus) != l.nCPU() {
		t.Errorf("hwloc PUs: %d, want %d", len(pus), l.nCPU())
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
