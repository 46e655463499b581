package topo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/slurmcores"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// miniNode is a hand-written sysfs: packages of cores (OS CPU lists), NUMA
// nodes (CPU lists) and their SLIT. Enough for hwloc, Slurm and gpuprep.
type miniNode struct {
	packages [][]string // per package, each core's CPU list
	numa     []string
	slit     [][]int
}

func (m miniNode) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	put := func(p, content string) {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all := cpuset.New()
	for _, p := range m.packages {
		for _, c := range p {
			all = all.Union(cpuset.MustParse(c))
		}
	}
	n := all.Max() + 1
	both := func(p string, set cpuset.Set) { put(p, set.Mask(n)); put(p+"_list", set.String()) }
	for _, f := range []string{"online", "possible", "present"} {
		put("sys/devices/system/cpu/"+f, all.String())
	}
	coreID := 0
	for pi, p := range m.packages {
		pkg := cpuset.New()
		for _, c := range p {
			pkg = pkg.Union(cpuset.MustParse(c))
		}
		for _, c := range p {
			core := cpuset.MustParse(c)
			for _, cpu := range core.List() {
				d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", cpu)
				put(d+"physical_package_id", fmt.Sprint(pi))
				put(d+"core_id", fmt.Sprint(coreID))
				both(d+"core_cpus", core)
				both(d+"thread_siblings", core)
				both(d+"package_cpus", pkg)
				both(d+"core_siblings", pkg)
			}
			coreID++
		}
	}
	var ids []int
	for i, c := range m.numa {
		set := cpuset.MustParse(c)
		d := fmt.Sprintf("sys/devices/system/node/node%d/", i)
		put(d+"cpumap", set.Mask(n))
		put(d+"cpulist", set.String())
		var row []string
		for _, v := range m.slit[i] {
			row = append(row, fmt.Sprint(v))
		}
		put(d+"distance", strings.Join(row, " "))
		put(d+"meminfo", fmt.Sprintf("Node %d MemTotal:       16777216 kB", i))
		ids = append(ids, i)
	}
	put("sys/devices/system/node/online", cpuset.New(ids...).String())
	put("sys/devices/system/node/possible", cpuset.New(ids...).String())
	put("proc/meminfo", fmt.Sprintf("MemTotal:       %d kB", 16777216*len(m.numa)))
	put("proc/hwloc-nofile-info", "Architecture: x86_64")
	return dir
}

// TestDistanceGroupsAgainstSlurm: hand-written nodes where hwloc's NUMA
// distance groups change Slurm's order, held against the Slurm oracle.
func TestDistanceGroupsAgainstSlurm(t *testing.T) {
	slurmcores.Require(t)
	pairs := [][]int{{10, 21, 16, 21}, {21, 10, 21, 16}, {16, 21, 10, 21}, {21, 16, 21, 10}}
	for name, m := range map[string]miniNode{
		// Four sockets, socket 0 paired with 2 and 1 with 3.
		"4 sockets paired": {
			packages: [][]string{{"0", "1"}, {"2", "3"}, {"4", "5"}, {"6", "7"}},
			numa:     []string{"0-1", "2-3", "4-5", "6-7"}, slit: pairs,
		},
		// One socket in SNC4 with interleaved numbering, sub-NUMA nodes 0
		// and 2 closer to each other than to 1 and 3.
		"SNC4 paired": {
			packages: [][]string{{"0", "1", "2", "3", "4", "5", "6", "7"}},
			numa:     []string{"0,4", "1,5", "2,6", "3,7"},
			slit:     [][]int{{10, 12, 11, 12}, {12, 10, 12, 11}, {11, 12, 10, 12}, {12, 11, 12, 10}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := m.write(t)
			node, err := topo.Discover(host.NewRoot(dir), nil, topo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := slurmcores.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got, exp []string
			for _, c := range node.Cores {
				got = append(got, c.CPUs.String())
			}
			for _, c := range want.Cores {
				exp = append(exp, c.CPUs.String())
			}
			if strings.Join(got, " ") != strings.Join(exp, " ") {
				t.Errorf("cores: gpuprep %v, Slurm %v", got, exp)
			}
		})
	}
}
