package topo_test

import (
	"testing"

	"gpuprep/internal/slurmcores"
	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// TestAgainstSlurm holds the node model against Slurm's own numbering on
// every fixture root: the core ids of gres.conf Cores= against an oracle
// that numbers cores as slurmd's xcpuinfo does (internal/slurmcores, C on
// libhwloc), and the counts against `slurmd -C` itself (HWLOC_FSROOT).
func TestAgainstSlurm(t *testing.T) {
	slurmcores.Require(t)
	slurmcores.RequireSlurmd(t)
	for _, name := range testroot.Names() {
		t.Run(name, func(t *testing.T) {
			dir := testroot.Shared(t, name)
			node, err := topo.Discover(host.NewRoot(dir), nil, topo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := slurmcores.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(node.Cores) != len(want.Cores) {
				t.Fatalf("cores: gpuprep %d, Slurm %d", len(node.Cores), len(want.Cores))
			}
			wrong := 0
			for i, c := range want.Cores {
				got := node.Cores[i]
				if !got.CPUs.Equal(c.CPUs) {
					if wrong++; wrong <= 5 {
						t.Errorf("core %d: gpuprep CPUs %s, Slurm %s", i, got.CPUs, c.CPUs)
					}
				}
				if len(node.Sockets) != want.Sockets {
					continue
				}
				if s := node.Sockets[c.Socket]; !got.CPUs.IsSubsetOf(s.CPUs) {
					t.Errorf("core %d: not in gpuprep's socket %d (%s), Slurm's socket index", i, c.Socket, s.CPUs)
				}
			}
			if wrong > 0 {
				t.Errorf("%d of %d core ids differ from Slurm's", wrong, len(want.Cores))
			}
			counts, err := slurmcores.SlurmdC(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := slurmcores.Counts{CPUs: len(node.CPUs), Boards: 1, Sockets: len(node.Sockets),
				CoresPerSocket: len(node.Cores) / len(node.Sockets), ThreadsPerCore: node.ThreadsPerCore()}
			if got != counts {
				t.Errorf("gpuprep %s, slurmd -C %s", got, counts)
			}
		})
	}
}
