package topo

import (
	"fmt"
	"testing"

	"gpuprep/lib/cpuset"
)

// splitCores is the cores of a split-numbered node (threads of core c at c,
// c+n, ...): n cores of t threads.
func splitCores(n, t int) []cpuset.Set {
	out := make([]cpuset.Set, n)
	for c := range out {
		var ids []int
		for k := 0; k < t; k++ {
			ids = append(ids, c+k*n)
		}
		out[c] = cpuset.New(ids...)
	}
	return out
}

// numaNodes are NUMA nodes 0.. with these CPUs and no distances.
func numaNodes(cpus ...cpuset.Set) []NUMANode {
	out := make([]NUMANode, len(cpus))
	for i, c := range cpus {
		out[i] = NUMANode{ID: i, CPUs: c}
	}
	return out
}

func coreCPUs(cores []Core) []string {
	out := make([]string, len(cores))
	for i, c := range cores {
		out[i] = c.CPUs.String()
	}
	return out
}

func TestNumberCoresSplit(t *testing.T) {
	// 2 sockets x 2 cores x 2 threads, split numbering: socket 0 has
	// CPUs 0,1 (first threads) and 4,5 (siblings).
	s := cpuSets{
		online:   cpuset.Range(0, 7),
		packages: []idSet{{0, cpuset.MustParse("0-1,4-5")}, {1, cpuset.MustParse("2-3,6-7")}},
		cores:    splitCores(4, 2),
	}
	cores, sockets := numberCores(s, nil)
	if got, want := fmt.Sprint(coreCPUs(cores)), "[0,4 1,5 2,6 3,7]"; got != want {
		t.Errorf("cores %s, want %s", got, want)
	}
	if len(sockets) != 2 || sockets[1].CPUs.String() != "2-3,6-7" || sockets[1].ID != 1 || fmt.Sprint(sockets[1].Cores) != "[2 3]" {
		t.Errorf("sockets %+v", sockets)
	}
	cpus := s.cpuList(cores)
	if cpus[6].Core != 2 || cpus[5].Core != 1 || cpus[6].Socket != 1 || cpus[5].CoreID != 1 {
		t.Errorf("CPU fields: %+v", cpus)
	}
}

// TestNumberCoresSNCInterleaved is a dual SNC2 Xeon with round-robin
// numbering (4 cores per socket, no SMT): sockets alternate (even CPUs on
// socket 0) and so do the sub-NUMA nodes of a socket. Slurm (hwloc) numbers
// all cores of the first NUMA node of a socket before those of the second.
func TestNumberCoresSNCInterleaved(t *testing.T) {
	s := cpuSets{
		online:   cpuset.Range(0, 7),
		packages: []idSet{{0, cpuset.New(0, 2, 4, 6)}, {1, cpuset.New(1, 3, 5, 7)}},
		l3:       []cpuset.Set{cpuset.New(0, 2, 4, 6), cpuset.New(1, 3, 5, 7)},
		cores:    splitCores(8, 1),
	}
	numa := numaNodes(cpuset.New(0, 4), cpuset.New(2, 6), cpuset.New(1, 5), cpuset.New(3, 7))
	cores, sockets := numberCores(s, numa)
	if got, want := fmt.Sprint(coreCPUs(cores)), "[0 4 2 6 1 5 3 7]"; got != want {
		t.Errorf("cores %s, want %s", got, want)
	}
	if fmt.Sprint(sockets[0].Cores) != "[0 1 2 3]" || sockets[1].CPUs.String() != "1,3,5,7" {
		t.Errorf("sockets %+v", sockets)
	}
	// Without the NUMA nodes, cores follow their first CPU.
	cores, _ = numberCores(s, nil)
	if got, want := fmt.Sprint(coreCPUs(cores)), "[0 2 4 6 1 3 5 7]"; got != want {
		t.Errorf("no NUMA: cores %s, want %s", got, want)
	}
}

// TestNumberCoresGroups: L3 groups and clusters order cores within a NUMA
// node; a group equal to its parent or to a core changes nothing; L1/L2
// caches are not read at all.
func TestNumberCoresGroups(t *testing.T) {
	s := cpuSets{
		online:   cpuset.Range(0, 7),
		packages: []idSet{{0, cpuset.Range(0, 7)}},
		dies:     []idSet{{0, cpuset.Range(0, 7)}},
		l3:       []cpuset.Set{cpuset.New(0, 3, 4, 7), cpuset.New(1, 2, 5, 6)},
		clusters: []cpuset.Set{cpuset.New(0, 4), cpuset.New(3, 7), cpuset.New(1, 5), cpuset.New(2, 6)},
		cores:    splitCores(8, 1),
	}
	cores, _ := numberCores(s, numaNodes(cpuset.Range(0, 7)))
	if got, want := fmt.Sprint(coreCPUs(cores)), "[0 4 3 7 1 5 2 6]"; got != want {
		t.Errorf("cores %s, want %s", got, want)
	}
}

// TestNumberCoresUnknownPackageIDs: physical_package_id -1 on every CPU
// (s390x, some POWER): the masks still tell the sockets apart, named by
// their index; with no package files at all the node is one socket.
func TestNumberCoresUnknownPackageIDs(t *testing.T) {
	s := cpuSets{
		online:   cpuset.Range(0, 7),
		packages: []idSet{{-1, cpuset.Range(0, 3)}, {-1, cpuset.Range(4, 7)}},
		cores:    []cpuset.Set{cpuset.New(0, 1), cpuset.New(2, 3), cpuset.New(4, 5), cpuset.New(6, 7)},
	}
	cores, sockets := numberCores(s, nil)
	if len(sockets) != 2 || sockets[0].ID != 0 || sockets[1].ID != 1 || cores[3].Socket != 1 {
		t.Errorf("sockets %+v cores %+v", sockets, cores)
	}
	s.packages = []idSet{{3, cpuset.Range(0, 3)}, {3, cpuset.Range(4, 7)}}
	if _, sockets = numberCores(s, nil); sockets[1].ID != 1 {
		t.Errorf("duplicate package ids: sockets %+v", sockets)
	}
	s.packages = []idSet{{4, cpuset.Range(0, 3)}, {2, cpuset.Range(4, 7)}}
	if _, sockets = numberCores(s, nil); sockets[0].ID != 4 || sockets[1].ID != 2 {
		t.Errorf("physical ids: sockets %+v", sockets)
	}
	s.packages, s.cores = nil, nil
	cores, sockets = numberCores(s, nil)
	if len(sockets) != 1 || len(cores) != 8 || sockets[0].ID != 0 {
		t.Errorf("no topology files: sockets %+v cores %d", sockets, len(cores))
	}
}

func TestHasComputeUnits(t *testing.T) {
	for _, c := range []struct {
		info string
		want bool
	}{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 21\nmodel\t\t: 2\n\nprocessor\t: 1\n", true},
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 22\n", true},
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n", false},
		{"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 21\n", false},
		{"", false},
	} {
		if got := hasComputeUnits([]byte(c.info)); got != c.want {
			t.Errorf("hasComputeUnits(%q) = %v", c.info, got)
		}
	}
}

// TestThreadsPerCoreAsSlurmd: slurmd -C divides CPUs by cores; a hybrid CPU
// (P-cores of 2 threads, E-cores of 1) has 1 thread per core to Slurm.
func TestThreadsPerCoreAsSlurmd(t *testing.T) {
	s := cpuSets{
		online:   cpuset.Range(0, 5),
		packages: []idSet{{0, cpuset.Range(0, 5)}},
		cores:    []cpuset.Set{cpuset.New(0, 1), cpuset.New(2, 3), cpuset.New(4), cpuset.New(5)},
	}
	cores, sockets := numberCores(s, nil)
	n := &Node{CPUs: s.cpuList(cores), Cores: cores, Sockets: sockets}
	if got := n.ThreadsPerCore(); got != 1 {
		t.Errorf("hybrid: ThreadsPerCore = %d, want 1", got)
	}
	s.cores = s.cores[:2]
	s.online = cpuset.Range(0, 3)
	s.packages = []idSet{{0, cpuset.Range(0, 3)}}
	cores, sockets = numberCores(s, nil)
	if n := (&Node{CPUs: s.cpuList(cores), Cores: cores, Sockets: sockets}); n.ThreadsPerCore() != 2 {
		t.Errorf("SMT2: ThreadsPerCore = %d", n.ThreadsPerCore())
	}
}

// BenchmarkNumberCores1024 numbers a 1024-CPU node (2 sockets x 256 cores x
// 2 threads, one cluster per core): the pure part of every topology read.
func BenchmarkNumberCores1024(b *testing.B) {
	s := cpuSets{online: cpuset.Range(0, 1023), cores: splitCores(512, 2), clusters: splitCores(512, 2)}
	s.packages = []idSet{{0, cpuset.MustParse("0-255,512-767")}, {1, cpuset.MustParse("256-511,768-1023")}}
	numa := numaNodes(cpuset.MustParse("0-255,512-767"), cpuset.MustParse("256-511,768-1023"))
	for i := 0; i < b.N; i++ {
		numberCores(s, numa)
	}
}
