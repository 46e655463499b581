package fixturegen

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/nodeshape"
	"gpuprep/internal/testroot"
)

func writeRoot(t *testing.T, name string) (string, nodeshape.Shape) {
	t.Helper()
	s, ok := nodeshape.ByName(name)
	if !ok {
		t.Fatalf("no shape %s", name)
	}
	return sharedRoot(t, name), s
}

func read(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestArchiveDeterministic(t *testing.T) {
	for _, s := range nodeshape.All() {
		t.Run(s.Name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := WriteArchive(s, &a); err != nil {
				t.Fatal(err)
			}
			if err := WriteArchive(s, &b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("two archives of the same shape differ")
			}
			if a.Len() > 900<<10 {
				t.Errorf("archive is %d bytes; keep fixtures small", a.Len())
			}
			// The archive holds exactly the generated tree.
			tr, err := build(s)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffArchive(t, a.Bytes(), tr); d != "" {
				t.Fatalf("archive and tree differ: %s", d)
			}
		})
	}
	// And on disk, unpacked, it is what Write writes.
	s, _ := nodeshape.ByName("cloudvm")
	var a bytes.Buffer
	if err := WriteArchive(s, &a); err != nil {
		t.Fatal(err)
	}
	x := t.TempDir()
	if err := testroot.Extract(bytes.NewReader(a.Bytes()), x); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(t, x, sharedRoot(t, "cloudvm")); d != "" {
		t.Fatalf("unpacked archive and Write differ: %s", d)
	}
}

// diffArchive names the first difference between a .tar.gz and a tree.
func diffArchive(t *testing.T, archive []byte, tr *tree) string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	r := tar.NewReader(gz)
	seen := 0
	prev := ""
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name <= prev {
			return "entries not sorted at " + name
		}
		prev = name
		if !h.ModTime.Equal(archiveTime) || h.Uid != 0 || h.Gid != 0 {
			return name + ": time or owner not fixed"
		}
		e, ok := tr.entries[name]
		if !ok {
			return name + " only in the archive"
		}
		seen++
		switch h.Typeflag {
		case tar.TypeDir:
			if e.kind != kindDir {
				return name + " is a directory in the archive only"
			}
		case tar.TypeSymlink:
			if e.kind != kindLink || e.target != h.Linkname {
				return name + " link differs"
			}
		case tar.TypeReg:
			data, _ := io.ReadAll(r)
			if e.kind != kindFile || !bytes.Equal(data, e.data) {
				return name + " content differs"
			}
		default:
			return name + ": unexpected entry type"
		}
	}
	if seen != len(tr.entries) {
		return fmt.Sprintf("archive has %d entries, tree %d", seen, len(tr.entries))
	}
	return ""
}

// diffTrees names the first difference between two trees.
func diffTrees(t *testing.T, a, b string) string {
	t.Helper()
	list := func(root string) map[string]string {
		m := map[string]string{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				m[rel] = "link:" + target
			case d.IsDir():
				m[rel] = "dir"
			default:
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				m[rel] = "file:" + string(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ma, mb := list(a), list(b)
	for k, v := range ma {
		if w, ok := mb[k]; !ok {
			return k + " only in the archive"
		} else if v != w {
			return k + " differs"
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			return k + " only in Write's tree"
		}
	}
	return ""
}

// TestCommittedArchives holds test/roots/<shape>.tar.gz to the generator.
func TestCommittedArchives(t *testing.T) {
	for _, s := range nodeshape.All() {
		t.Run(s.Name, func(t *testing.T) {
			path, err := testroot.Archive(s.Name)
			if err != nil {
				t.Fatal(err)
			}
			have, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run: go run ./internal/fixturegen/cmd/mkfixtures -out test/roots)", err)
			}
			var want bytes.Buffer
			if err := WriteArchive(s, &want); err != nil {
				t.Fatal(err)
			}
			// Compare the tar streams: gzip's bytes may change with Go.
			if !bytes.Equal(gunzip(t, have), gunzip(t, want.Bytes())) {
				t.Fatalf("%s is stale: run go run ./internal/fixturegen/cmd/mkfixtures -out test/roots", path)
			}
		})
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSymlinks: every link is relative and resolves inside the root; the
// bus and class links name what they point at.
func TestSymlinks(t *testing.T) {
	for _, s := range nodeshape.All() {
		t.Run(s.Name, func(t *testing.T) {
			dir := sharedRoot(t, s.Name)
			real, _ := filepath.EvalSymlinks(dir)
			n := 0
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Type()&fs.ModeSymlink == 0 {
					return err
				}
				n++
				target, _ := os.Readlink(p)
				if filepath.IsAbs(target) {
					t.Errorf("%s: absolute link %s", p, target)
				}
				r, err := filepath.EvalSymlinks(p)
				if err != nil {
					t.Errorf("%s -> %s dangles", p, target)
					return nil
				}
				if !strings.HasPrefix(r, real+string(filepath.Separator)) {
					t.Errorf("%s -> %s leaves the root", p, target)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("no symlinks")
			}
			for _, g := range s.GPUs {
				link := filepath.Join(dir, "sys/bus/pci/devices", g.BusID)
				r, err := filepath.EvalSymlinks(link)
				if err != nil || filepath.Base(r) != g.BusID {
					t.Errorf("%s resolves to %s (%v)", link, r, err)
				}
				drv, err := os.Readlink(filepath.Join(r, "driver"))
				if err != nil || filepath.Base(drv) != "nvidia" {
					t.Errorf("GPU %s driver link %q (%v)", g.BusID, drv, err)
				}
			}
			for _, nic := range s.NICs {
				r, err := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/net", nic.NetName, "device"))
				if err != nil {
					t.Errorf("net %s: %v", nic.NetName, err)
					continue
				}
				if nic.IBName == "" {
					continue
				}
				if filepath.Base(r) != nic.BusID {
					t.Errorf("net %s device is %s, want %s", nic.NetName, r, nic.BusID)
				}
				ib, err := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/infiniband", nic.IBName, "device"))
				if err != nil || ib != r {
					t.Errorf("infiniband %s device is %s, want %s (%v)", nic.IBName, ib, r, err)
				}
				if _, err := os.Stat(filepath.Join(ib, "net", nic.NetName)); err != nil {
					t.Errorf("%s: no net/%s under the HCA", nic.IBName, nic.NetName)
				}
			}
		})
	}
}

// TestMasksMatchLists: every mask file agrees with its list twin.
func TestMasksMatchLists(t *testing.T) {
	for _, name := range []string{"dgxa100", "gh200", "snc2xeon", "bulldozer", "altra", "thunderx2", "oldkernel"} {
		dir, _ := writeRoot(t, name)
		pairs := 0
		err := filepath.WalkDir(filepath.Join(dir, "sys"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			var list string
			switch base := filepath.Base(p); {
			case base == "cpumap":
				list = filepath.Join(filepath.Dir(p), "cpulist")
			case base == "local_cpus":
				list = p[:len(p)-len("local_cpus")] + "local_cpulist"
			case base == "shared_cpu_map":
				list = filepath.Join(filepath.Dir(p), "shared_cpu_list")
			case strings.Contains(p, "/topology/") && (strings.HasSuffix(base, "_cpus") || strings.HasSuffix(base, "_siblings")):
				list = p + "_list"
			default:
				return nil
			}
			mask, lst := strings.TrimSpace(read(t, "/", p)), strings.TrimSpace(strings.TrimSuffix(read(t, "/", list), "\x00"))
			if got := maskToList(t, mask); got != lst {
				t.Errorf("%s: mask %s is %s, list says %s", p, mask, got, lst)
			}
			pairs++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pairs < 50 { // oldkernel: 14 online CPUs, 6 pairs each
			t.Errorf("%s: only %d mask/list pairs", name, pairs)
		}
	}
}

func maskToList(t *testing.T, mask string) string {
	t.Helper()
	words := strings.Split(mask, ",")
	var ids []int
	for i, w := range words {
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			t.Fatalf("mask %q: %v", mask, err)
		}
		for b := 0; b < 32; b++ {
			if v&(1<<b) != 0 {
				ids = append(ids, 32*(len(words)-1-i)+b)
			}
		}
	}
	return cpuList(ids)
}

func TestCPUMaskFormat(t *testing.T) {
	cases := []struct {
		ids   []int
		nbits int
		want  string
	}{
		{[]int{0}, 32, "00000001"},
		{[]int{0, 1, 2, 3}, 144, "0000,00000000,00000000,00000000,0000000f"},
		{[]int{143}, 144, "8000,00000000,00000000,00000000,00000000"},
		{[]int{0, 223}, 224, "80000000,00000000,00000000,00000000,00000000,00000000,00000001"},
		{[]int{95}, 96, "80000000,00000000,00000000"},
		{[]int{4}, 6, "10"},
	}
	for _, c := range cases {
		if got := cpuMask(c.ids, c.nbits); got != c.want {
			t.Errorf("cpuMask(%v, %d) = %s, want %s", c.ids, c.nbits, got, c.want)
		}
	}
	if got := cpuList([]int{0, 1, 2, 5, 7, 8}); got != "0-2,5,7-8" {
		t.Errorf("cpuList = %s", got)
	}
}

// TestNumbering pins the CPU numbering the shapes promise.
func TestNumbering(t *testing.T) {
	cases := map[string]map[string]string{
		"dgxh100": {
			"sys/devices/system/node/node0/cpulist":                     "0-55,112-167",
			"sys/devices/system/node/node1/cpulist":                     "56-111,168-223",
			"sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0,112",
			"sys/devices/system/cpu/online":                             "0-223",
			"sys/bus/pci/devices/0000:18:00.0/local_cpulist":            "0-55,112-167",
			"sys/bus/pci/devices/0000:db:00.0/numa_node":                "1",
		},
		"dgxa100": {
			"sys/devices/system/node/node0/cpulist":                    "0-15,128-143",
			"sys/devices/system/node/node3/cpulist":                    "48-63,176-191",
			"sys/devices/system/node/node7/cpulist":                    "112-127,240-255",
			"sys/bus/pci/devices/0000:07:00.0/numa_node":               "3",
			"sys/bus/pci/devices/0000:07:00.0/local_cpulist":           "48-63,176-191",
			"sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list": "0-3,128-131",
		},
		"cloudvm": {
			"sys/devices/system/node/online":                 "0",
			"sys/bus/pci/devices/0000:0a:00.0/numa_node":     "-1",
			"sys/bus/pci/devices/0000:0a:00.0/local_cpulist": "0-95",
			"sys/bus/pci/devices/0000:0a:00.0/local_cpus":    "ffffffff,ffffffff,ffffffff",
		},
		"gh200": {
			"sys/devices/system/node/online":                   "0-17",
			"sys/devices/system/node/has_cpu":                  "0-1",
			"sys/devices/system/node/has_memory":               "0-2,10",
			"sys/devices/system/node/node1/cpulist":            "72-143",
			"sys/bus/pci/devices/0019:01:00.0/numa_node":       "1",
			"proc/driver/nvidia/gpus/0019:01:00.0/numa_status": "Node: 10",
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
	for _, name := range []string{"cloudvm"} {
		dir, _ := writeRoot(t, name)
		for _, p := range []string{"sys/devices/system/cpu/cpu0/cpufreq", "sys/devices/system/cpu/cpu0/cpuidle", "sys/devices/system/cpu/cpufreq"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s: %s exists", name, p)
			}
		}
	}
	dir, _ := writeRoot(t, "dgxh100")
	if got := read(t, dir, "sys/devices/system/cpu/cpu5/cpufreq/energy_performance_preference"); got != "balance_performance\n" {
		t.Errorf("EPP %q", got)
	}
	if got := read(t, dir, "sys/devices/system/cpu/cpu5/cpuidle/state3/name"); got != "C6\n" {
		t.Errorf("state3 %q", got)
	}
}

// TestNVIDIAFiles: the driver files agree with the shapes, and the MIG
// capability minors follow the driver's full table.
func TestNVIDIAFiles(t *testing.T) {
	for _, s := range nodeshape.All() {
		t.Run(s.Name, func(t *testing.T) {
			dir := sharedRoot(t, s.Name)
			table := map[string]int{}
			lines := strings.Split(strings.TrimSuffix(read(t, dir, "proc/driver/nvidia-caps/mig-minors"), "\n"), "\n")
			if len(lines) != 2+32*15*9 {
				t.Fatalf("mig-minors has %d lines", len(lines))
			}
			for i, ln := range lines {
				f := strings.Fields(ln)
				if len(f) != 2 {
					t.Fatalf("mig-minors line %q", ln)
				}
				m, err := strconv.Atoi(f[1])
				if err != nil || m != i+1 {
					t.Fatalf("mig-minors line %d: %q: minors must count up from 1", i, ln)
				}
				table[f[0]] = m
			}
			for k, v := range map[string]int{"config": 1, "monitor": 2, "gpu0/gi0/access": 3,
				"gpu0/gi0/ci0/access": 4, "gpu0/gi0/ci7/access": 11, "gpu0/gi1/access": 12,
				"gpu3/gi3/ci3/access": 439, "gpu6/gi11/ci5/access": 918, "gpu31/gi14/ci7/access": 4322} {
				if table[k] != v {
					t.Errorf("mig-minors %s = %d, want %d", k, table[k], v)
				}
			}
			for i, g := range s.GPUs {
				info := read(t, dir, "proc/driver/nvidia/gpus/"+g.BusID+"/information")
				for _, want := range []string{
					"Model: \t\t " + g.Name + "\n",
					"GPU UUID: \t " + g.UUID + "\n",
					"Bus Location: \t " + g.BusID + "\n",
					fmt.Sprintf("Device Minor: \t %d\n", g.Minor),
				} {
					if !strings.Contains(info, want) {
						t.Errorf("GPU %d information lacks %q:\n%s", i, want, info)
					}
				}
				for _, m := range g.MIGDevices {
					gi := fmt.Sprintf("gpu%d/gi%d/access", g.Minor, m.GI)
					ci := fmt.Sprintf("gpu%d/gi%d/ci%d/access", g.Minor, m.GI, m.CI)
					if table[gi] != m.GICapMinor || table[ci] != m.CICapMinor {
						t.Errorf("GPU %d %s: shape minors %d/%d, mig-minors %d/%d", i, m.Profile,
							m.GICapMinor, m.CICapMinor, table[gi], table[ci])
					}
					base := fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi%d", g.Minor, m.GI)
					if got, want := read(t, dir, base+"/access"), capFile(m.GICapMinor, 292); got != want {
						t.Errorf("%s: %q, want %q", base, got, want)
					}
					if got, want := read(t, dir, fmt.Sprintf("%s/ci%d/access", base, m.CI)), capFile(m.CICapMinor, 292); got != want {
						t.Errorf("%s/ci%d: %q, want %q", base, m.CI, got, want)
					}
				}
			}
		})
	}
	// dgxa100's MIG GPU has minor 1: its instances live under gpu1.
	dir, _ := writeRoot(t, "dgxa100")
	if _, err := os.Stat(filepath.Join(dir, "proc/driver/nvidia/capabilities/gpu1/mig/gi1/ci0/access")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "proc/driver/nvidia/capabilities/gpu0/mig/gi1")); err == nil {
		t.Error("MIG instance written under the index, not the minor")
	}
}

func TestValidateRejects(t *testing.T) {
	base, _ := nodeshape.ByName("dgxa100")
	clone := func() nodeshape.Shape {
		s := base
		s.GPUs = append([]nodeshape.GPU(nil), base.GPUs...)
		s.NICs = append([]nodeshape.NIC(nil), base.NICs...)
		for i := range s.GPUs {
			s.GPUs[i].MIGDevices = append([]nodeshape.MIGDevice(nil), base.GPUs[i].MIGDevices...)
		}
		return s
	}
	bad := map[string]func(*nodeshape.Shape){
		"duplicate bus id":  func(s *nodeshape.Shape) { s.NICs[0].BusID = s.GPUs[0].BusID },
		"duplicate minor":   func(s *nodeshape.Shape) { s.GPUs[1].Minor = s.GPUs[0].Minor },
		"wrong cap minor":   func(s *nodeshape.Shape) { s.GPUs[0].MIGDevices[0].GICapMinor = 12 },
		"uppercase bus id":  func(s *nodeshape.Shape) { s.GPUs[2].BusID = "0000:4E:00.0" },
		"NUMA out of range": func(s *nodeshape.Shape) { s.GPUs[3].NUMANode = 8 },
		"uneven NPS":        func(s *nodeshape.Shape) { s.NUMAPerSocket = 3 },
		"mixed switch":      func(s *nodeshape.Shape) { s.NICs[0].NUMANode = 0 },
		"overlapping roots": func(s *nodeshape.Shape) { s.NICs[1].BusID = "0000:45:00.0" },
	}
	for name, mutate := range bad {
		s := clone()
		mutate(&s)
		if err := Write(s, t.TempDir()); err == nil {
			t.Errorf("%s: Write accepted the shape", name)
		}
	}
}

func TestShapes(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range nodeshape.All() {
		if seen[s.Name] {
			t.Errorf("duplicate shape %s", s.Name)
		}
		seen[s.Name] = true
		if got, ok := nodeshape.ByName(s.Name); !ok || got.Name != s.Name {
			t.Errorf("ByName(%s) failed", s.Name)
		}
		uuids := map[string]bool{}
		for _, g := range s.GPUs {
			if !strings.HasPrefix(g.UUID, "GPU-") || len(g.UUID) != 40 || uuids[g.UUID] {
				t.Errorf("%s: bad or duplicate UUID %q", s.Name, g.UUID)
			}
			uuids[g.UUID] = true
		}
	}
	if _, ok := nodeshape.ByName("nosuch"); ok {
		t.Error("ByName(nosuch) succeeded")
	}
	// All returns fresh copies.
	a := nodeshape.All()
	a[0].GPUs[0].Minor = 99
	if b := nodeshape.All(); b[0].GPUs[0].Minor == 99 {
		t.Error("All shares slices between calls")
	}
}
