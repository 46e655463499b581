package topo_test

import (
	"os"
	"slices"
	"testing"

	"gpuprep/internal/hwloc"
	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// requireHwloc skips without hwloc, except in CI where a missing oracle is a
// failure.
func requireHwloc(t *testing.T) {
	t.Helper()
	if hwloc.Available() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("lstopo-no-graphics (Debian package hwloc) is missing; make test installs it")
	}
	t.Skip("lstopo-no-graphics not installed")
}

// TestAgainstHwloc holds the node model against hwloc's reading of the same
// fixture root, loaded as slurmd loads it (hwloc.SlurmFilters): sockets,
// Slurm core ids (hwloc Core L# on that tree), threads and NUMA nodes must
// agree on every fixture.
func TestAgainstHwloc(t *testing.T) {
	requireHwloc(t)
	for _, name := range testroot.Names() {
		t.Run(name, func(t *testing.T) {
			dir := testroot.Shared(t, name)
			node, err := topo.Discover(host.NewRoot(dir), nil, topo.Options{NICs: true})
			if err != nil {
				t.Fatal(err)
			}
			hw, err := hwloc.ReadArgs(dir, hwloc.SlurmFilters...)
			if err != nil {
				t.Fatal(err)
			}
			if len(node.Sockets) != len(hw.Packages) {
				t.Fatalf("sockets: gpuprep %d, hwloc %d", len(node.Sockets), len(hw.Packages))
			}
			for i, p := range hw.Packages {
				if !node.Sockets[i].CPUs.Equal(p.CPUs) {
					t.Errorf("socket %d: gpuprep cpus %s, hwloc %s", i, node.Sockets[i].CPUs, p.CPUs)
				}
			}
			if len(node.Cores) != len(hw.Cores) {
				t.Fatalf("cores: gpuprep %d, hwloc %d", len(node.Cores), len(hw.Cores))
			}
			for i, c := range hw.Cores {
				if !node.Cores[i].CPUs.Equal(c.CPUs) {
					t.Errorf("Core L#%d: gpuprep cpus %s, hwloc %s", i, node.Cores[i].CPUs, c.CPUs)
				}
				// Packages match in order (above); hwloc has no os_index
				// for a package whose physical_package_id is -1.
				pi := slices.IndexFunc(hw.Packages, func(p hwloc.Object) bool { return c.CPUs.IsSubsetOf(p.CPUs) })
				if pi < 0 || pi >= len(node.Sockets) || node.Cores[i].Socket != node.Sockets[pi].ID {
					t.Errorf("Core L#%d: gpuprep socket %d, hwloc package L#%d", i, node.Cores[i].Socket, pi)
				}
			}
			if len(node.CPUs) != len(hw.PUs) {
				t.Errorf("CPUs: gpuprep %d, hwloc PUs %d", len(node.CPUs), len(hw.PUs))
			}
			if len(node.NUMA) != len(hw.NUMA) {
				t.Fatalf("NUMA nodes: gpuprep %d, hwloc %d", len(node.NUMA), len(hw.NUMA))
			}
			byID := map[int]topo.NUMANode{}
			for _, n := range node.NUMA {
				byID[n.ID] = n
			}
			for _, h := range hw.NUMA {
				n, ok := byID[h.OSIndex]
				if !ok {
					t.Errorf("hwloc NUMA node %d unknown to gpuprep", h.OSIndex)
					continue
				}
				// hwloc gives a CPU-less node the cpuset of its
				// parent; gpuprep keeps it empty.
				if !n.CPUs.IsEmpty() && !n.CPUs.Equal(h.CPUs) {
					t.Errorf("NUMA %d: gpuprep cpus %s, hwloc %s", h.OSIndex, n.CPUs, h.CPUs)
				}
			}
		})
	}
}
