package topo

import (
	"fmt"
	"testing"

	"gpuprep/lib/cpuset"
)

// slitNodes are NUMA nodes with the given distance matrix, node i holding
// CPUs cpus[i].
func slitNodes(slit [][]int, cpus ...cpuset.Set) []NUMANode {
	nodes := numaNodes(cpus...)
	for i := range nodes {
		nodes[i].Distances = slit[i]
	}
	return nodes
}

func always(cpuset.Set) bool { return true }

func TestDistanceGroups(t *testing.T) {
	pairs := [][]int{{10, 21, 16, 21}, {21, 10, 21, 16}, {16, 21, 10, 21}, {21, 16, 21, 10}}
	four := []cpuset.Set{cpuset.New(0), cpuset.New(1), cpuset.New(2), cpuset.New(3)}
	for _, c := range []struct {
		name string
		slit [][]int
		want string
	}{
		{"sockets 0+2 and 1+3 closer", pairs, "[0,2 1,3]"},
		{"uniform: one group of all is none", [][]int{{10, 21, 21, 21}, {21, 10, 21, 21}, {21, 21, 10, 21}, {21, 21, 21, 10}}, "[]"},
		{"asymmetric: none", [][]int{{10, 21, 16, 21}, {21, 10, 21, 16}, {17, 21, 10, 21}, {21, 16, 21, 10}}, "[]"},
		{"diagonal not smallest: none", [][]int{{10, 21, 10, 21}, {21, 10, 21, 16}, {10, 21, 10, 21}, {21, 16, 21, 10}}, "[]"},
		{"one node alone", [][]int{{10, 16, 21, 21}, {16, 10, 21, 21}, {21, 21, 10, 21}, {21, 21, 21, 10}}, "[0-1]"},
		{"missing distances", [][]int{{10, 21, 16, 21}, {21, 10, 21, 16}, {16, 21, 10, 21}, nil}, "[]"},
	} {
		got := fmt.Sprint(distanceGroups(slitNodes(c.slit, four...), always))
		if got != c.want {
			t.Errorf("%s: groups %s, want %s", c.name, got, c.want)
		}
	}
	// Two levels: pairs at 11, pairs of pairs at 12, the rest 21.
	var slit [][]int
	var cpus []cpuset.Set
	for i := 0; i < 8; i++ {
		row := make([]int, 8)
		for j := range row {
			switch {
			case i == j:
				row[j] = 10
			case i/2 == j/2:
				row[j] = 11
			case i/4 == j/4:
				row[j] = 12
			default:
				row[j] = 21
			}
		}
		slit = append(slit, row)
		cpus = append(cpus, cpuset.New(i))
	}
	if got := fmt.Sprint(distanceGroups(slitNodes(slit, cpus...), always)); got != "[0-1 2-3 4-5 6-7 0-3 4-7]" {
		t.Errorf("two levels: %s", got)
	}
	// A group that would cut another object is dropped, and nothing is
	// grouped above it.
	cut := func(g cpuset.Set) bool { return !g.Equal(cpuset.New(0, 1)) }
	if got := fmt.Sprint(distanceGroups(slitNodes(slit, cpus...), cut)); got != "[2-3 4-5 6-7]" {
		t.Errorf("cut: %s", got)
	}
}

// TestNumberCoresDistanceGroups: four sockets whose SLIT pairs socket 0
// with 2 and 1 with 3; hwloc groups them, so Slurm's socket order is 0, 2,
// 1, 3.
func TestNumberCoresDistanceGroups(t *testing.T) {
	s := cpuSets{online: cpuset.Range(0, 7), cores: splitCores(8, 1)}
	var sockets []cpuset.Set
	for p := 0; p < 4; p++ {
		set := cpuset.New(2*p, 2*p+1)
		s.packages = append(s.packages, idSet{p, set})
		sockets = append(sockets, set)
	}
	numa := slitNodes([][]int{{10, 21, 16, 21}, {21, 10, 21, 16}, {16, 21, 10, 21}, {21, 16, 21, 10}}, sockets...)
	cores, socks := numberCores(s, numa)
	if got, want := fmt.Sprint(coreCPUs(cores)), "[0 1 4 5 2 3 6 7]"; got != want {
		t.Errorf("cores %s, want %s", got, want)
	}
	if socks[1].ID != 2 || socks[2].ID != 1 {
		t.Errorf("socket order %+v", socks)
	}
}
