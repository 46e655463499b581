package bind

import (
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/topo"
)

// rankUUIDs is RankUUIDs for each of ntasks ranks with env and gpuMode.
func rankUUIDs(t *testing.T, n *topo.Node, ntasks int, env map[string]string, gpuMode string) ([][]string, []error) {
	t.Helper()
	var out [][]string
	var errs []error
	for i := 0; i < ntasks; i++ {
		in := Input{Node: n, Task: taskEnv(t, i, ntasks, env), Config: defaults()}
		in.Config.GPU = gpuMode
		u, err := RankUUIDs(in, PlanRank(in, i))
		out, errs = append(out, u), append(errs, err)
	}
	return out, errs
}

// RankUUIDs names the devices each rank's command will see: its own GPU
// when srunwrap narrows to it, every visible GPU when it does not, and a
// MIG device by the node's spelling of its UUID.
func TestRankUUIDs(t *testing.T) {
	n := shapeNode(t, "dgxa100")
	var all []string
	for _, g := range n.GPUs {
		all = append(all, g.UUID)
	}
	if len(all) != 8 || all[0] == "" {
		t.Fatalf("fixture GPUs %v: want 8 with UUIDs", all)
	}
	env := map[string]string{"SLURM_STEP_GPUS": seq(8), "CUDA_VISIBLE_DEVICES": seq(8)}
	got, errs := rankUUIDs(t, n, 8, env, srunconf.GPUNarrow)
	for i := range got {
		if errs[i] != nil || !slices.Equal(got[i], []string{all[i]}) {
			t.Errorf("narrow, rank %d: %v, %v; want %s alone", i, got[i], errs[i], all[i])
		}
	}
	for _, c := range []struct {
		name, mode string
		ntasks     int
	}{{"keep", srunconf.GPUKeep, 8}, {"off", srunconf.GPUOff, 8}, {"ranks that do not divide", srunconf.GPUNarrow, 3}} {
		got, errs = rankUUIDs(t, n, c.ntasks, env, c.mode)
		for i := range got {
			if errs[i] != nil || !slices.Equal(got[i], all) {
				t.Errorf("%s, rank %d: %v, %v; want all 8 GPUs", c.name, i, got[i], errs[i])
			}
		}
	}
	// Slurm's one GPU, index 3, left as it is: the rank sees GPU 3.
	got, errs = rankUUIDs(t, n, 1, map[string]string{"SLURM_STEP_GPUS": "3", "CUDA_VISIBLE_DEVICES": "3"}, srunconf.GPUKeep)
	if errs[0] != nil || !slices.Equal(got[0], []string{all[3]}) {
		t.Errorf("one GPU kept: %v, %v; want %s", got[0], errs[0], all[3])
	}

	g := &n.GPUs[0]
	g.MIG.Devices = []gpu.MIGDevice{{GI: 1, CI: 0, UUID: "MIG-0e6ab5a4-9ad6-5b3d-b9c4-1c1f4a0d0b01"},
		{GI: 5, CI: 0, UUID: "MIG-4b0f7e0c-1c7e-5c3e-8d0f-6a3b2c1d0e02"}}
	cvd := strings.ToUpper(g.MIG.Devices[0].UUID[4:])
	got, errs = rankUUIDs(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-" + cvd + "," + g.MIG.Devices[1].UUID}, srunconf.GPUNarrow)
	for i := range got {
		if errs[i] != nil || !slices.Equal(got[i], []string{g.MIG.Devices[i].UUID}) {
			t.Errorf("MIG rank %d: %v, %v; want %s", i, got[i], errs[i], g.MIG.Devices[i].UUID)
		}
	}

	if _, errs = rankUUIDs(t, n, 1, map[string]string{}, srunconf.GPUNarrow); errs[0] == nil || strings.Contains(errs[0].Error(), "unbound") {
		t.Errorf("no GPU visible: error %v, want one without 'running unbound'", errs[0])
	}
	g.UUID = ""
	if _, errs = rankUUIDs(t, n, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, srunconf.GPUNarrow); errs[0] == nil || !strings.Contains(errs[0].Error(), "no UUID") {
		t.Errorf("GPU without UUID: error %v", errs[0])
	}
}
