package gresgen

import (
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

// TestPlanNUMAAsSocketAuto: "auto" counts NUMA nodes as sockets where they
// split the sockets, and warns that slurm.conf must say so; where NUMA
// nodes are the sockets it changes nothing.
func TestPlanNUMAAsSocketAuto(t *testing.T) {
	node := twoSocketNode(mkGPU(0, 0, "0000:01:00.0", 0, "0-1", nil), mkGPU(1, 1, "0000:02:00.0", 1, "2-3", nil))
	node.NUMA = []topo.NUMANode{
		{ID: 0, CPUs: cpuset.MustParse("0-1,8-9")}, {ID: 1, CPUs: cpuset.MustParse("2-3,10-11")},
		{ID: 2, CPUs: cpuset.MustParse("4-5,12-13")}, {ID: 3, CPUs: cpuset.MustParse("6-7,14-15")},
	}
	res, _ := Plan(node, Options{NUMAAsSocketAuto: true})
	if !res.NeedsNUMAAsSocket || res.Node.Sockets != 4 || res.Node.CoresPerSocket != 2 ||
		len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Msg, `numa_as_socket = "auto"`) ||
		!strings.Contains(res.Warnings[0].Fix, "SlurmdParameters=numa_node_as_socket") {
		t.Errorf("split sockets: node %s, needs %v, warnings %v", res.Node, res.NeedsNUMAAsSocket, res.Warnings)
	}

	whole := twoSocketNode(mkGPU(0, 0, "0000:01:00.0", 0, "0-3", nil))
	whole.NUMA = []topo.NUMANode{
		{ID: 0, CPUs: whole.Sockets[0].CPUs}, {ID: 1, CPUs: whole.Sockets[1].CPUs},
		{ID: 2}, // a CPU-less (GPU memory) node does not count
	}
	res, _ = Plan(whole, Options{NUMAAsSocketAuto: true})
	if res.NeedsNUMAAsSocket || res.Node.Sockets != 2 || len(res.Warnings) != 0 {
		t.Errorf("NUMA = sockets: node %s, warnings %v", res.Node, res.Warnings)
	}
}

func TestOptionsFromConfigNUMAAsSocket(t *testing.T) {
	cfg := func(v config.Tristate) *config.Config {
		c := config.Default()
		c.Gres.NUMAAsSocket = v
		return c
	}
	for _, tc := range []struct {
		cfg        *config.Config
		flag       config.Tristate
		on, isAuto bool
	}{
		{config.Default(), "", false, true}, // the built-in default is auto
		{nil, "", false, true},
		{cfg(config.True), "", true, false},
		{cfg(config.False), "", false, false},
		{cfg(config.True), config.False, false, false}, // the flag wins both ways
		{cfg(config.False), config.True, true, false},
		{config.Default(), config.False, false, false},
	} {
		opt := OptionsFromConfig(tc.cfg, tc.flag, "")
		if opt.NUMAAsSocket != tc.on || opt.NUMAAsSocketAuto != tc.isAuto {
			t.Errorf("flag %q: got %v/%v, want %v/%v", tc.flag, opt.NUMAAsSocket, opt.NUMAAsSocketAuto, tc.on, tc.isAuto)
		}
	}
}
