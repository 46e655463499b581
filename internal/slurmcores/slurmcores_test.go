package slurmcores

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/hwloc"
	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
)

func TestParse(t *testing.T) {
	out := "counts cpus=6 boards=1 sockets=2 cores_per_socket=2 threads_per_core=2\n" +
		"core 0 socket 0 pus 0,4 mapped 0,4\n" +
		"core 1 socket 0 pus 1,5 mapped 1,5\n" +
		"core 2 socket 1 pus 2 mapped 2\n" +
		"core 3 socket 1 pus 3,6,7 mapped -\n"
	top, err := Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{CPUs: 6, Boards: 1, Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 2}
	if top.Counts() != want {
		t.Errorf("counts %v, want %v", top.Counts(), want)
	}
	if len(top.Cores) != 4 {
		t.Fatalf("%d cores, want 4", len(top.Cores))
	}
	c := top.Cores[3]
	if c.ID != 3 || c.Socket != 1 || !c.CPUs.Equal(cpuset.New(3, 6, 7)) || !c.Mapped.IsEmpty() {
		t.Errorf("core 3: %+v", c)
	}
	if !top.Cores[0].CPUs.Equal(cpuset.New(0, 4)) || !top.Cores[0].Mapped.Equal(cpuset.New(0, 4)) {
		t.Errorf("core 0: %+v", top.Cores[0])
	}

	for _, bad := range []string{
		"",
		"core 0 socket 0 pus 0 mapped 0\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1 x=1\n",
		"counts cpus=1 cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\n",
		"counts cpus=-1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\ncore 1 socket 0 pus 0 mapped 0\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\ncore 0 socket 0 pus 0\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\ncore 0 socket 0 pus x mapped 0\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\n\ncore 0 socket 0 pus 0 mapped 0\n",
		"counts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\ncounts cpus=1 boards=1 sockets=1 cores_per_socket=1 threads_per_core=1\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestCountsRoundsSocketsPerBoard(t *testing.T) {
	top := &Topology{CPUs: 6, Boards: 2, Sockets: 3, CoresPerSocket: 2, ThreadsPerCore: 1}
	if got := top.Counts().Sockets; got != 2 {
		t.Errorf("Sockets %d, want 2 (slurmd -C prints SocketsPerBoard=3/2)", got)
	}
}

func TestParseSlurmdC(t *testing.T) {
	out := "NodeName=vm CPUs=96 Boards=1 SocketsPerBoard=1 CoresPerSocket=48 ThreadsPerCore=2 RealMemory=24105\n" +
		"UpTime=0-06:40:00\n"
	c, err := ParseSlurmdC([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{CPUs: 96, Boards: 1, Sockets: 1, CoresPerSocket: 48, ThreadsPerCore: 2}
	if c != want {
		t.Errorf("got %v, want %v", c, want)
	}
	c, err = ParseSlurmdC([]byte("NodeName=n CPUs=16 Boards=2 SocketsPerBoard=2 CoresPerSocket=2 ThreadsPerCore=2\n"))
	if err != nil || c.Sockets != 4 {
		t.Errorf("two boards: %v, %v", c, err)
	}
	for _, bad := range []string{"", "UpTime=0\n", "NodeName=n CPUs=16 Boards=1\n", "NodeName=n CPUs=x Boards=1 SocketsPerBoard=1 CoresPerSocket=1 ThreadsPerCore=1\n"} {
		if _, err := ParseSlurmdC([]byte(bad)); err == nil {
			t.Errorf("ParseSlurmdC(%q) succeeded", bad)
		}
	}
}

// roots are the fixture roots, and this machine ("/").
func roots(t *testing.T) map[string]string {
	names := testroot.Names()
	if len(names) == 0 {
		t.Fatal("no fixture roots in test/roots")
	}
	r := map[string]string{"host": "/"}
	for _, n := range names {
		r[n] = ""
	}
	return r
}

func rootOf(t *testing.T, name, root string) string {
	if root != "" {
		return root
	}
	return testroot.Shared(t, name)
}

// TestCountsMatchSlurmd validates the oracle against Slurm itself: its counts
// equal what `slurmd -C` prints for the same root.
func TestCountsMatchSlurmd(t *testing.T) {
	Require(t)
	RequireSlurmd(t)
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			root := rootOf(t, name, root)
			top, err := Read(root)
			if err != nil {
				t.Fatal(err)
			}
			slurm, err := SlurmdC(root)
			if err != nil {
				t.Fatal(err)
			}
			if top.Counts() != slurm {
				t.Errorf("oracle %v, slurmd -C %v", top.Counts(), slurm)
			}
		})
	}
}

// TestCoresMatchHwloc holds the oracle's core list against hwloc's own Core
// objects (Core L#) read by lstopo with Slurm's filters, and checks that the
// cores partition the PUs.
func TestCoresMatchHwloc(t *testing.T) {
	Require(t)
	if !hwloc.Available() {
		missing(t, errors.New("no lstopo-no-graphics"), "hwloc")
	}
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			root := rootOf(t, name, root)
			top, err := Read(root)
			if err != nil {
				t.Fatal(err)
			}
			hw, err := hwloc.ReadArgs(root, hwloc.SlurmFilters...)
			if err != nil {
				t.Fatal(err)
			}
			if len(top.Cores) != len(hw.Cores) {
				t.Fatalf("oracle has %d cores, hwloc %d", len(top.Cores), len(hw.Cores))
			}
			var all, seen cpuset.Set
			for _, pu := range hw.PUs {
				all = all.Union(pu.CPUs)
			}
			if top.CPUs != len(hw.PUs) {
				t.Errorf("oracle CPUs=%d, hwloc has %d PUs", top.CPUs, len(hw.PUs))
			}
			pkgOf := map[int]int{} // oracle socket -> hwloc package
			for i, c := range top.Cores {
				if !c.CPUs.Equal(hw.Cores[i].CPUs) {
					t.Errorf("core %d: oracle PUs %v, hwloc Core L#%d %v", i, c.CPUs, i, hw.Cores[i].CPUs)
				}
				if !c.CPUs.Intersection(seen).IsEmpty() {
					t.Errorf("core %d: PUs %v also in another core", i, c.CPUs)
				}
				if !c.Mapped.IsSubsetOf(c.CPUs) {
					t.Errorf("core %d: mapped %v not among its PUs %v", i, c.Mapped, c.CPUs)
				}
				seen = seen.Union(c.CPUs)
				if p, ok := pkgOf[c.Socket]; ok && p != hw.Cores[i].Package {
					t.Errorf("core %d: socket %d spans packages P#%d and P#%d", i, c.Socket, p, hw.Cores[i].Package)
				}
				pkgOf[c.Socket] = hw.Cores[i].Package
				if i > 0 && c.Socket < top.Cores[i-1].Socket {
					t.Errorf("core %d: socket %d after %d", i, c.Socket, top.Cores[i-1].Socket)
				}
			}
			if !seen.Equal(all) {
				t.Errorf("cores cover %v, PUs are %v", seen, all)
			}
			if len(pkgOf) != top.Sockets {
				t.Errorf("cores in %d sockets, Sockets=%d", len(pkgOf), top.Sockets)
			}
		})
	}
}

// TestSynthetic checks small hand-written layouts hwloc generates itself
// (HWLOC_SYNTHETIC): boards (a Group level above the packages), PU OS ids
// interleaved across cores, counts against slurmd -C.
func TestSynthetic(t *testing.T) {
	Require(t)
	cases := []struct {
		synthetic string
		counts    Counts
		cores     []string // each core's PUs, in abstract order
	}{
		{"group:2 pack:2 core:2 pu:2", Counts{CPUs: 16, Boards: 2, Sockets: 4, CoresPerSocket: 2, ThreadsPerCore: 2},
			[]string{"0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-13", "14-15"}},
		{"pack:2 l3:2 core:2 pu:2(indexes=0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15)",
			Counts{CPUs: 16, Boards: 1, Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2},
			[]string{"0,8", "1,9", "2,10", "3,11", "4,12", "5,13", "6,14", "7,15"}},
		{"pack:3 core:1 pu:1", Counts{CPUs: 3, Boards: 1, Sockets: 3, CoresPerSocket: 1, ThreadsPerCore: 1},
			[]string{"0", "1", "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.synthetic, func(t *testing.T) {
			env := []string{"HWLOC_SYNTHETIC=" + tc.synthetic, "PATH=/usr/bin:/bin"}
			top, err := readEnv(env)
			if err != nil {
				t.Fatal(err)
			}
			if top.Counts() != tc.counts {
				t.Errorf("counts %v, want %v", top.Counts(), tc.counts)
			}
			var got []string
			for _, c := range top.Cores {
				got = append(got, c.CPUs.String())
				if !c.Mapped.Equal(c.CPUs) {
					t.Errorf("core %d: mapped %v, PUs %v", c.ID, c.Mapped, c.CPUs)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.cores, " ") {
				t.Errorf("cores %v, want %v", got, tc.cores)
			}
			if SlurmdAvailable() != nil {
				return
			}
			slurm, err := slurmdCEnv(env)
			if err != nil {
				t.Fatal(err)
			}
			if slurm != tc.counts {
				t.Errorf("slurmd -C %v, want %v", slurm, tc.counts)
			}
		})
	}
}

// writeRoot writes a minimal sysfs CPU topology: cores[i] lists the CPU ids
// of core i, all in package 0.
func writeRoot(t *testing.T, cores [][]int) string {
	root := t.TempDir()
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	var all cpuset.Set
	for _, c := range cores {
		all = all.Union(cpuset.New(c...))
	}
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"online", "possible", "present"} {
		write(filepath.Join(cpuDir, f), all.String())
	}
	for i, c := range cores {
		sib := cpuset.New(c...)
		for _, cpu := range c {
			d := filepath.Join(cpuDir, fmt.Sprintf("cpu%d/topology", cpu))
			write(filepath.Join(d, "physical_package_id"), "0")
			write(filepath.Join(d, "die_id"), "0")
			write(filepath.Join(d, "core_id"), strconv.Itoa(i))
			write(filepath.Join(d, "thread_siblings"), sib.Mask(all.Max()+1))
			write(filepath.Join(d, "core_cpus"), sib.Mask(all.Max()+1))
			write(filepath.Join(d, "core_siblings"), all.Mask(all.Max()+1))
			write(filepath.Join(d, "package_cpus"), all.Mask(all.Max()+1))
		}
	}
	return root
}

// TestHybrid is a hand-written root whose cores have 2 and 1 threads (as on
// Intel's hybrid CPUs): Slurm counts ThreadsPerCore=CPUs/cores=1 and maps
// only each core's first PU.
func TestHybrid(t *testing.T) {
	Require(t)
	root := writeRoot(t, [][]int{{0, 1}, {2, 3}, {4}, {5}})
	top, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{CPUs: 6, Boards: 1, Sockets: 1, CoresPerSocket: 4, ThreadsPerCore: 1}
	if top.Counts() != want {
		t.Errorf("counts %v, want %v", top.Counts(), want)
	}
	wantCPUs := []string{"0-1", "2-3", "4", "5"}
	wantMapped := []string{"0", "2", "4", "5"}
	if len(top.Cores) != len(wantCPUs) {
		t.Fatalf("%d cores, want %d", len(top.Cores), len(wantCPUs))
	}
	for i, c := range top.Cores {
		if c.CPUs.String() != wantCPUs[i] || c.Mapped.String() != wantMapped[i] {
			t.Errorf("core %d: PUs %v mapped %v, want %s and %s", i, c.CPUs, c.Mapped, wantCPUs[i], wantMapped[i])
		}
	}
	if SlurmdAvailable() == nil {
		slurm, err := SlurmdC(root)
		if err != nil {
			t.Fatal(err)
		}
		if slurm != want {
			t.Errorf("slurmd -C %v, want %v", slurm, want)
		}
	}
}

// TestUnreadableRoot: hwloc falls back to describing this machine when its
// Linux backend finds no CPU topology under HWLOC_FSROOT; the oracle fails.
func TestUnreadableRoot(t *testing.T) {
	Require(t)
	if top, err := Read(t.TempDir()); err == nil {
		t.Errorf("Read of an empty root succeeded: %+v", top.Counts())
	}
}
