package topo_test

import (
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// BenchmarkDiscoverCPUs reads the CPU and NUMA layout of the dgxh100 root
// (224 CPUs, 2 sockets): what every hook and gres run pays before GPUs.
func BenchmarkDiscoverCPUs(b *testing.B) {
	r := host.NewRoot(testroot.Shared(b, "dgxh100"))
	for i := 0; i < b.N; i++ {
		if _, err := topo.Discover(r, nil, topo.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
