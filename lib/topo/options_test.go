package topo_test

import (
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// Options.GPUs places only the named GPUs, each exactly as a full discovery
// places it; NICs are read only when asked for.
func TestDiscoverSubsetAndNICsOnDemand(t *testing.T) {
	root := host.NewRoot(testroot.Shared(t, "dgxh100"))
	b := gpu.OpenProcfs(root)
	full, err := topo.Discover(root, b, topo.Options{NICs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.GPUs) != 8 || len(full.NICs) == 0 || len(full.GPUs[5].NearNICs) == 0 {
		t.Fatalf("full: %d GPUs, %d NICs, GPU 5 near %v", len(full.GPUs), len(full.NICs), full.GPUs[5].NearNICs)
	}
	sub, err := topo.Discover(root, b, topo.Options{GPUs: []int{5, 2}, NICs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.GPUs) != 2 || sub.GPUs[0].Index != 2 || sub.GPUs[1].Index != 5 {
		t.Fatalf("subset: %+v", sub.GPUs)
	}
	for _, g := range sub.GPUs {
		want := full.GPUs[g.Index]
		if g.NUMA != want.NUMA || !g.Cores.Equal(want.Cores) || !g.CPUAffinity.Equal(want.CPUAffinity) ||
			len(g.NearNICs) != len(want.NearNICs) || g.NearNICs[0] != want.NearNICs[0] {
			t.Errorf("GPU %d: subset %+v, full %+v", g.Index, g, want)
		}
	}
	bare, err := topo.Discover(root, b, topo.Options{GPUs: []int{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(bare.GPUs) != 0 || bare.NICs != nil {
		t.Errorf("no GPUs, no NICs asked: %d GPUs, NICs %v", len(bare.GPUs), bare.NICs)
	}
}
