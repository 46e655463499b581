package bind

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gpuprep/lib/slurm"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/topo"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
)

// One rank per GPU on the DGX shapes: rank i takes GPU i, sees only it,
// runs on its share of the GPU's NUMA node and uses the HCA(s) next to it.
func TestEightRanksEightGPUs(t *testing.T) {
	for _, shape := range []string{"dgxh100", "dgxb200", "dgxa100"} {
		t.Run(shape, func(t *testing.T) {
			n := shapeNode(t, shape)
			in, plans := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}, nil)
			checkPlans(t, in, plans)
			for i, p := range plans {
				if p.GPU == nil || p.GPU.Index != i || p.Visible != strconv.Itoa(i) {
					t.Fatalf("rank %d: GPU %+v, visible %q", i, p.GPU, p.Visible)
				}
				if p.CPUs.IsEmpty() || !slices.Equal(p.MemNodes, []int{n.GPUs[i].NUMA}) || p.MemPolicy != srunconf.MemBind {
					t.Errorf("rank %d: CPUs %s, memory %s %v", i, p.CPUs, p.MemPolicy, p.MemNodes)
				}
				if len(p.HCAs) != 1 || len(p.Warnings) != 0 {
					t.Errorf("rank %d: HCAs %v (%s), warnings %v", i, p.HCAs, p.HCAFrom, p.Warnings)
				}
			}
			hcas := map[string]bool{}
			for _, p := range plans {
				hcas[p.HCAs[0]] = true
			}
			if len(hcas) != 8 {
				t.Errorf("8 ranks use %d HCAs: each GPU has one near it", len(hcas))
			}
		})
	}
}

// Exact runs derived by hand from the shapes. dgxh100: 2 x 56 cores, split
// numbering (core c's threads are CPUs c and c+112), GPUs 0-3 on node 0:
// four ranks get 14 cores each. dgxh100 and dgxb200 have one HCA behind
// each GPU's switch (mlx5_i for GPU i). dgxa100 (NPS4, 16 cores per node):
// GPUs 0 and 1 share node 3 (cores 48-63) and a pair of switches with
// mlx5_0 and mlx5_1, so they split the node and get one HCA each.
func TestEightRanksExact(t *testing.T) {
	split := func(lo, hi, smt int) cpuset.Set { return cpuset.Range(lo, hi).Union(cpuset.Range(lo+smt, hi+smt)) }
	for _, c := range []struct {
		shape string
		rank  int
		cpus  cpuset.Set
		hca   string
	}{
		{"dgxh100", 0, split(0, 13, 112), "mlx5_0:1"},
		{"dgxh100", 3, split(42, 55, 112), "mlx5_3:1"},
		{"dgxh100", 5, split(70, 83, 112), "mlx5_5:1"},
		{"dgxa100", 0, split(48, 55, 128), "mlx5_0:1"},
		{"dgxa100", 1, split(56, 63, 128), "mlx5_1:1"},
		{"dgxa100", 2, split(16, 23, 128), "mlx5_2:1"},
		{"dgxa100", 3, split(24, 31, 128), "mlx5_3:1"},
	} {
		n := shapeNode(t, c.shape)
		_, plans := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}, nil)
		p := plans[c.rank]
		if !p.CPUs.Equal(c.cpus) || !slices.Equal(p.HCAs, []string{c.hca}) {
			t.Errorf("%s rank %d: CPUs %s (%s), HCAs %v; want %s, %s", c.shape, c.rank, p.CPUs, p.CPUsFrom, p.HCAs, c.cpus, c.hca)
		}
	}
}

// Four ranks on two GPUs, with CUDA_VISIBLE_DEVICES renumbered from 0
// (cgroup-confined devices) or equal to SLURM_STEP_GPUS (not confined):
// ranks 0 and 2 take GPU 4, ranks 1 and 3 GPU 5; the four split NUMA node
// 1 (cores 56-111) by GPU, then rank: 14 cores each.
func TestFourRanksTwoGPUs(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	for _, cvd := range []string{"0,1", "4,5"} {
		in, plans := planAll(t, n, 4, map[string]string{"CUDA_VISIBLE_DEVICES": cvd, "SLURM_STEP_GPUS": "4,5"}, nil)
		checkPlans(t, in, plans)
		entries := strings.Split(cvd, ",")
		wantCores := map[int][2]int{0: {56, 69}, 2: {70, 83}, 1: {84, 97}, 3: {98, 111}}
		for i, p := range plans {
			if p.GPU == nil || p.GPU.Index != 4+i%2 || p.Visible != entries[i%2] {
				t.Fatalf("CUDA_VISIBLE_DEVICES=%s rank %d: GPU %+v visible %q", cvd, i, p.GPU, p.Visible)
			}
			w := wantCores[i]
			if want := cpuset.Range(w[0], w[1]).Union(cpuset.Range(w[0]+112, w[1]+112)); !p.CPUs.Equal(want) {
				t.Errorf("rank %d: CPUs %s, want %s", i, p.CPUs, want)
			}
			if want := "mlx5_" + strconv.Itoa(4+i%2) + ":1"; !slices.Equal(p.HCAs, []string{want}) {
				t.Errorf("rank %d: HCAs %v, want %s", i, p.HCAs, want)
			}
		}
	}
}

// Sixteen ranks on eight GPUs: two per GPU, eight per NUMA node, seven
// cores each, the two ranks of a GPU side by side.
func TestSixteenRanksEightGPUs(t *testing.T) {
	for _, shape := range []string{"dgxh100", "dgxb200", "dgxa100"} {
		n := shapeNode(t, shape)
		in, plans := planAll(t, n, 16, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}, nil)
		checkPlans(t, in, plans)
		for i, p := range plans {
			if p.GPU == nil || p.GPU.Index != i%8 || p.CPUs.IsEmpty() {
				t.Fatalf("%s rank %d: GPU %+v CPUs %s", shape, i, p.GPU, p.CPUs)
			}
			if !slices.Equal(p.HCAs, plans[i%8].HCAs) {
				t.Errorf("%s rank %d: HCAs %v, rank %d (same GPU) %v", shape, i, p.HCAs, i%8, plans[i%8].HCAs)
			}
		}
		// The two ranks of a GPU split, in rank order, the run one rank
		// per GPU gets.
		_, one := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}, nil)
		for i := 0; i < 8; i++ {
			a, b := plans[i].CPUs, plans[i+8].CPUs
			if !a.Union(b).Equal(one[i].CPUs) || a.Min() > b.Min() {
				t.Errorf("%s ranks %d and %d (GPU %d): CPUs %s and %s, want %s split in two", shape, i, i+8, i, a, b, one[i].CPUs)
			}
		}
	}
}

// GPU UUIDs in any order: the rank takes the GPU the UUID names, and the
// narrowed CUDA_VISIBLE_DEVICES keeps the UUID form.
func TestGPUUUIDs(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	u6, u2 := n.GPUs[6].UUID, n.GPUs[2].UUID
	in, plans := planAll(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": u6 + "," + u2}, nil)
	checkPlans(t, in, plans)
	if plans[0].GPU.Index != 6 || plans[0].Visible != u6 || plans[1].GPU.Index != 2 || plans[1].Visible != u2 {
		t.Fatalf("plans %+v %+v", plans[0].GPU, plans[1].GPU)
	}
	if !plans[0].CPUs.IsSubsetOf(nodeCPUs(t, n, 1)) || !plans[1].CPUs.IsSubsetOf(nodeCPUs(t, n, 0)) {
		t.Errorf("CPUs %s, %s: not on the GPUs' nodes 1 and 0", plans[0].CPUs, plans[1].CPUs)
	}
	if !slices.Equal(plans[0].HCAs, []string{"mlx5_6:1"}) {
		t.Errorf("GPU 6's rank: HCAs %v", plans[0].HCAs)
	}
}

// MIG UUIDs take their parent GPU's locality; two MIG devices of one GPU
// split its node's CPUs and its two equally near HCAs. The older
// MIG-GPU-<uuid>/<gi>/<ci> form names the parent itself.
func TestMIGUUIDs(t *testing.T) {
	n := shapeNode(t, "dgxa100")
	g := &n.GPUs[0]
	g.MIG.Devices = []gpu.MIGDevice{{GI: 1, CI: 0, UUID: "MIG-0e6ab5a4-9ad6-5b3d-b9c4-1c1f4a0d0b01"},
		{GI: 5, CI: 0, UUID: "MIG-4b0f7e0c-1c7e-5c3e-8d0f-6a3b2c1d0e02"}}
	for _, cvd := range []string{
		g.MIG.Devices[0].UUID + "," + g.MIG.Devices[1].UUID,
		"MIG-" + g.UUID + "/1/0,MIG-" + g.UUID + "/5/0",
	} {
		in, plans := planAll(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": cvd}, nil)
		checkPlans(t, in, plans)
		entries := strings.Split(cvd, ",")
		for i, p := range plans {
			if p.GPU == nil || p.GPU.Index != 0 || p.GPU.MIG != entries[i] || p.Visible != entries[i] || len(p.Warnings) != 0 {
				t.Fatalf("%s rank %d: GPU %+v visible %q warnings %v", cvd, i, p.GPU, p.Visible, p.Warnings)
			}
			if !p.CPUs.IsSubsetOf(nodeCPUs(t, n, 3)) || len(coresOfNode(n, p.CPUs)) != 8 {
				t.Errorf("rank %d: CPUs %s, want half of node 3", i, p.CPUs)
			}
		}
		if !slices.Equal(plans[0].HCAs, []string{"mlx5_0:1"}) || !slices.Equal(plans[1].HCAs, []string{"mlx5_1:1"}) {
			t.Errorf("HCAs %v, %v: want mlx5_0 and mlx5_1 shared out", plans[0].HCAs, plans[1].HCAs)
		}
	}
	_, plans := planAll(t, n, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-99999999-9ad6-5b3d-b9c4-1c1f4a0d0b01"}, nil)
	if !unbound(plans[0]) || !warned(plans[0], CheckInput) {
		t.Errorf("unknown MIG device: %+v", plans[0])
	}
}

// A job whose CPUs on this node are only half of node 0: ranks of node-0
// GPUs stay in it; ranks of node-1 GPUs get the nearest CPUs the job has
// and a placement warning; all runs stay disjoint.
func TestRestrictedAllowed(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	pool := cpuset.Range(0, 27).Union(cpuset.Range(112, 139))
	in, plans := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)},
		func(in *Input) { in.Allowed, in.JobCPUs = pool, pool })
	checkPlans(t, in, plans)
	for i, p := range plans {
		if p.CPUs.IsEmpty() || !p.CPUs.IsSubsetOf(pool) {
			t.Errorf("rank %d: CPUs %s outside the job's %s", i, p.CPUs, pool)
		}
		if got, want := warned(p, "placement"), i >= 4; got != want {
			t.Errorf("rank %d: placement warning %v, want %v (%v)", i, got, want, p.Warnings)
		}
		if !slices.Equal(p.MemNodes, []int{0}) {
			t.Errorf("rank %d: memory nodes %v, want the CPUs' node 0", i, p.MemNodes)
		}
	}
	// Only the JobCPUs known (Allowed unknown) or only Allowed: the same.
	_, plans2 := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8)}, func(in *Input) { in.Allowed = pool })
	for i := range plans {
		if !plans[i].CPUs.Equal(plans2[i].CPUs) {
			t.Errorf("rank %d: %s with the job's CPUs, %s with the allowed set", i, plans[i].CPUs, plans2[i].CPUs)
		}
	}
}

// SNC2 with round-robin core numbering: each GPU's node is every fourth
// CPU (node 0 = 0,4,...,76; node 1 = 2,6,...; node 2 = 1,5,...; node 3 =
// 3,7,...); one rank per GPU gets exactly its node, two per GPU split it
// into whole cores.
func TestSNC2Xeon(t *testing.T) {
	n := shapeNode(t, "snc2xeon")
	mod4 := func(r int) cpuset.Set {
		var l []int
		for c := r; c < 80; c += 4 {
			l = append(l, c)
		}
		return cpuset.New(l...)
	}
	in, plans := planAll(t, n, 4, map[string]string{"CUDA_VISIBLE_DEVICES": seq(4)}, nil)
	checkPlans(t, in, plans)
	for i, want := range []cpuset.Set{mod4(0), mod4(2), mod4(1), mod4(3)} {
		if !plans[i].CPUs.Equal(want) || !slices.Equal(plans[i].MemNodes, []int{i}) {
			t.Errorf("rank %d: CPUs %s memory %v, want %s on node %d", i, plans[i].CPUs, plans[i].MemNodes, want, i)
		}
		if !slices.Equal(plans[i].HCAs, []string{"mlx5_0:1"}) {
			t.Errorf("rank %d: HCAs %v, want the one HCA", i, plans[i].HCAs)
		}
	}
	in, plans = planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(4)}, nil)
	checkPlans(t, in, plans)
	for i, p := range plans {
		if len(coresOfNode(n, p.CPUs)) != 5 {
			t.Errorf("rank %d: CPUs %s, want 5 of its node's 10 cores", i, p.CPUs)
		}
	}
}

// A VM (numa_node -1): the GPUs' local CPUs. cloudvm shows one node and
// local CPUs = all, so eight ranks split 48 cores and memory is left
// alone (one node); a hand-made VM whose GPUs 0-3 are local to the first
// 24 cores keeps their ranks there.
func TestCloudVM(t *testing.T) {
	n := shapeNode(t, "cloudvm")
	in, plans := planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8)}, nil)
	checkPlans(t, in, plans)
	for i, p := range plans {
		if len(coresOfNode(n, p.CPUs)) != 6 || p.MemNodes != nil || p.HCAs != nil || len(p.Warnings) != 0 {
			t.Errorf("rank %d: CPUs %s memory %v HCAs %v warnings %v", i, p.CPUs, p.MemNodes, p.HCAs, p.Warnings)
		}
	}
	first := n.CPUsOfCores(cpuset.Range(0, 23))
	for i := range n.GPUs {
		n.GPUs[i].NUMA = -1
		n.GPUs[i].Place.NUMANode = -1
		n.GPUs[i].CPUAffinity = first
		if i >= 4 {
			n.GPUs[i].CPUAffinity = allCPUs(n).Difference(first)
		}
	}
	in, plans = planAll(t, n, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8)}, nil)
	checkPlans(t, in, plans)
	for i, p := range plans {
		if !p.CPUs.IsSubsetOf(n.GPUs[i].CPUAffinity) || len(coresOfNode(n, p.CPUs)) != 6 {
			t.Errorf("rank %d: CPUs %s, want 6 cores of the GPU's local CPUs %s", i, p.CPUs, n.GPUs[i].CPUAffinity)
		}
	}
}

// Grace Hopper: each GPU's memory is a CPU-less node; ranks run on the
// Grace next to their GPU and bind memory there, adding the GPU's memory
// node only with srunwrap.gpu_memory_nodes. A GPU reported on its
// CPU-less node gets the nearest node with CPUs (and the HCA there).
func TestGH200(t *testing.T) {
	n := shapeNode(t, "gh200")
	env := map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}
	in, plans := planAll(t, n, 2, env, nil)
	checkPlans(t, in, plans)
	for i, p := range plans {
		if !p.CPUs.Equal(nodeCPUs(t, n, i)) || !slices.Equal(p.MemNodes, []int{i}) {
			t.Errorf("rank %d: CPUs %s memory %v, want node %d's CPUs and memory", i, p.CPUs, p.MemNodes, i)
		}
		if want := "mlx5_" + strconv.Itoa(i) + ":1"; !slices.Equal(p.HCAs, []string{want}) {
			t.Errorf("rank %d: HCAs %v, want %s", i, p.HCAs, want)
		}
	}
	in, plans = planAll(t, n, 2, env, func(in *Input) { in.Config.GPUMemoryNodes = true })
	checkPlans(t, in, plans)
	for i, p := range plans {
		if len(p.MemNodes) < 2 || p.MemNodes[0] != i || !slices.Contains(n.GPUs[i].MemoryNUMANodes, p.MemNodes[1]) {
			t.Errorf("rank %d: memory %v, want node %d then its GPU's memory node", i, p.MemNodes, i)
		}
	}
	for i := range n.GPUs {
		n.GPUs[i].NUMA = n.GPUs[i].MemoryNUMANodes[0]
		n.GPUs[i].Place.NUMANode = n.GPUs[i].NUMA
	}
	in, plans = planAll(t, n, 2, env, nil)
	checkPlans(t, in, plans)
	for i, p := range plans {
		if !p.CPUs.Equal(nodeCPUs(t, n, i)) || !slices.Equal(p.MemNodes, []int{i}) {
			t.Errorf("GPU on node %d: rank %d CPUs %s memory %v, want node %d", n.GPUs[i].NUMA, i, p.CPUs, p.MemNodes, i)
		}
		if want := "mlx5_" + strconv.Itoa(i) + ":1"; !slices.Equal(p.HCAs, []string{want}) {
			t.Errorf("GPU on node %d: rank %d HCAs %v, want %s (nearest by distance)", n.GPUs[i].NUMA, i, p.HCAs, want)
		}
	}
}

// A task Slurm already bound (--cpu-bind) more narrowly than the job:
// keep leaves its CPUs, warns when none is on the GPU's node and binds
// memory to the kept CPUs' node; replace plans as if unbound; off never
// sets CPUs but memory still follows the GPU.
func TestKeptBinding(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	job := allCPUs(n)
	bound := cpuset.New(0, 1, 112, 113)
	env := map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}
	_, free := planAll(t, n, 8, env, func(in *Input) { in.Allowed, in.JobCPUs = job, job })
	for _, mode := range []string{srunconf.CPUKeep, srunconf.CPUReplace, srunconf.CPUOff} {
		in, plans := planAll(t, n, 8, env, func(in *Input) {
			in.Allowed, in.JobCPUs, in.Config.CPUBinding = bound, job, mode
		})
		checkPlans(t, in, plans)
		for i, p := range plans {
			switch mode {
			case srunconf.CPUKeep:
				if !p.CPUs.IsEmpty() || !strings.HasPrefix(p.CPUsFrom, "kept") || warned(p, "placement") != (i >= 4) || !slices.Equal(p.MemNodes, []int{0}) {
					t.Errorf("keep rank %d: CPUs %s (%s) memory %v warnings %v", i, p.CPUs, p.CPUsFrom, p.MemNodes, p.Warnings)
				}
			case srunconf.CPUReplace:
				if !p.CPUs.Equal(free[i].CPUs) {
					t.Errorf("replace rank %d: CPUs %s, want %s", i, p.CPUs, free[i].CPUs)
				}
			case srunconf.CPUOff:
				if !p.CPUs.IsEmpty() || !slices.Equal(p.MemNodes, free[i].MemNodes) {
					t.Errorf("off rank %d: CPUs %s memory %v", i, p.CPUs, p.MemNodes)
				}
			}
		}
	}
}

// srunwrap.gpu keep binds like narrow but leaves CUDA_VISIBLE_DEVICES;
// off (and rank counts that do not divide the GPUs) chooses no GPU: the
// ranks share the visible GPUs' CPUs, without HCAs.
func TestGPUModes(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	env := map[string]string{"CUDA_VISIBLE_DEVICES": "0,4"}
	_, narrow := planAll(t, n, 2, env, nil)
	_, keep := planAll(t, n, 2, env, func(in *Input) { in.Config.GPU = srunconf.GPUKeep })
	for i := range keep {
		if keep[i].Visible != "" || keep[i].GPU == nil || keep[i].GPU.Index != narrow[i].GPU.Index || !keep[i].CPUs.Equal(narrow[i].CPUs) {
			t.Errorf("keep rank %d: %+v, narrow %+v", i, keep[i], narrow[i])
		}
	}
	both := nodeCPUs(t, n, 0).Union(nodeCPUs(t, n, 1))
	for _, c := range []struct {
		mode   string
		ntasks int
		warn   bool
	}{{srunconf.GPUOff, 2, false}, {srunconf.GPUNarrow, 3, true}, {srunconf.GPUNarrow, 1, false}} {
		in, plans := planAll(t, n, c.ntasks, env, func(in *Input) { in.Config.GPU = c.mode })
		checkPlans(t, in, plans)
		union := cpuset.Set{}
		for i, p := range plans {
			if p.GPU != nil || p.Visible != "" || p.HCAs != nil || warned(p, "placement") != c.warn {
				t.Errorf("%s, %d ranks: rank %d %+v", c.mode, c.ntasks, i, p)
			}
			union = union.Union(p.CPUs)
		}
		if !union.Equal(both) {
			t.Errorf("%s, %d ranks: CPUs %s, want the GPUs' nodes %s", c.mode, c.ntasks, union, both)
		}
	}
}

// SLURM_STEP_GPUS alone names node GPUs; the narrowed
// CUDA_VISIBLE_DEVICES is the UUID, which means the same whatever CUDA
// sees.
func TestStepGPUsOnly(t *testing.T) {
	n := shapeNode(t, "dgxb200")
	_, plans := planAll(t, n, 2, map[string]string{"SLURM_STEP_GPUS": "6,7"}, nil)
	for i, p := range plans {
		if p.GPU == nil || p.GPU.Index != 6+i || p.Visible != n.GPUs[6+i].UUID {
			t.Errorf("rank %d: %+v visible %q", i, p.GPU, p.Visible)
		}
	}
}

func unbound(p Plan) bool {
	return p.GPU == nil && p.Visible == "" && p.CPUs.IsEmpty() && p.MemNodes == nil && p.HCAs == nil
}

// Bad input gives an input warning and an unbound plan, never a panic.
func TestBadInput(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	for _, env := range []map[string]string{
		{},
		{"CUDA_VISIBLE_DEVICES": "9"},
		{"CUDA_VISIBLE_DEVICES": "0,2", "SLURM_STEP_GPUS": "4,5"},
		{"CUDA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000"},
		{"SLURM_STEP_GPUS": "12"},
	} {
		_, plans := planAll(t, n, 2, env, nil)
		for i, p := range plans {
			if !unbound(p) || !warned(p, CheckInput) {
				t.Errorf("%v rank %d: %+v", env, i, p)
			}
		}
	}
	task := taskEnv(t, 0, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "0"})
	for _, p := range []Plan{PlanRank(Input{Task: task}, 0), PlanRank(Input{Node: n, Task: task}, -1)} {
		if !unbound(p) || !warned(p, CheckInput) {
			t.Errorf("%+v", p)
		}
	}
	// A rank id beyond the task count still gets a plan.
	if p := PlanRank(Input{Node: n, Task: task}, 3); p.LocalID != 3 || p.GPU == nil {
		t.Errorf("rank 3 of 1: %+v", p)
	}
}

// HCAs: ports that are not ACTIVE and RoCE HCAs without a net device are
// skipped; without its own HCA, GPU 0's rank gets the next nearest ones
// (the HCAs on its NUMA node), all of them as it is alone.
func TestHCAFilters(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	env := map[string]string{"CUDA_VISIBLE_DEVICES": "0"}
	for i := range n.NICs {
		if n.NICs[i].Name == "mlx5_0" {
			n.NICs[i].Ports[0].State = "DOWN"
		}
	}
	_, plans := planAll(t, n, 1, env, nil)
	if want := []string{"mlx5_1:1", "mlx5_2:1", "mlx5_3:1", "mlx5_8:1"}; !slices.Equal(plans[0].HCAs, want) {
		t.Errorf("mlx5_0 down: HCAs %v (%s), want %v", plans[0].HCAs, plans[0].HCAFrom, want)
	}
	for i := range n.NICs {
		if n.NICs[i].Kind == "roce" {
			n.NICs[i].NetDevs = nil
		}
	}
	_, plans = planAll(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": "0,0"}, nil)
	if !slices.Equal(plans[0].HCAs, []string{"mlx5_1:1", "mlx5_3:1"}) || !slices.Equal(plans[1].HCAs, []string{"mlx5_2:1"}) {
		t.Errorf("RoCE without netdev, two ranks: HCAs %v and %v", plans[0].HCAs, plans[1].HCAs)
	}
}

func BenchmarkPlanRank(b *testing.B) {
	n := shapeNode(b, "dgxh100")
	in := Input{Node: n, Task: taskEnv(b, 3, 8, map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}),
		Allowed: allCPUs(n), JobCPUs: allCPUs(n), Config: defaults(), Brief: true}
	b.ReportAllocs()
	for b.Loop() {
		PlanRank(in, 3)
	}
}

// Slurm numbers GPUs in gres.conf order. With a gres.conf listing
// /dev/nvidia0..7 on dgxh100 (whose minors in PCI order are 2,3,0,1,6,7,4,5),
// Slurm's GPU 0 is the node's GPU 2, and its GPU 4 the node's GPU 6: the
// prolog records the order (SlurmGPUs) and each rank lands on the GPU
// Slurm gave it, whether CUDA_VISIBLE_DEVICES is renumbered or not.
func TestSlurmGPUOrder(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	byMinor := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, cvd := range []string{"0,1", "0,4"} {
		in, plans := planAll(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": cvd, "SLURM_STEP_GPUS": "0,4"},
			func(in *Input) { in.SlurmGPUs = byMinor })
		checkPlans(t, in, plans)
		for i, want := range []int{2, 6} {
			if g := plans[i].GPU; g == nil || g.Index != want || n.GPUs[want].Minor != []int{0, 4}[i] {
				t.Errorf("CUDA_VISIBLE_DEVICES=%s rank %d: GPU %+v, want node GPU %d (/dev/nvidia%d)", cvd, i, g, want, []int{0, 4}[i])
			}
		}
	}
	// Without the order, Slurm's indexes are the PCI order's.
	_, plans := planAll(t, n, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "4"}, nil)
	if g := plans[0].GPU; g == nil || g.Index != 4 {
		t.Errorf("no SlurmGPUs: GPU %+v, want 4", g)
	}
	// An index beyond what gres.conf lists is bad input.
	_, plans = planAll(t, n, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "9"},
		func(in *Input) { in.SlurmGPUs = byMinor })
	if plans[0].GPU != nil || !warned(plans[0], CheckInput) {
		t.Errorf("Slurm GPU 9 of 8: %+v", plans[0])
	}
}

// TestCUDAReadsSlurmIndexes: Slurm numbers GPUs in gres.conf order, CUDA in
// PCI bus order. When they differ (a hand-written gres.conf sorted by
// /dev/nvidia minor on a node whose minors are not in bus order), an index
// copied from Slurm would open another GPU than the rank was placed for,
// so srunwrap names the GPU by UUID; where they agree it keeps the index.
func TestCUDAReadsSlurmIndexes(t *testing.T) {
	n := shapeNode(t, "dgxh100") // minors in bus order: 2,3,0,1,6,7,4,5
	byMinor := []int{0, 1, 2, 3, 4, 5, 6, 7}
	busOrder := make([]int, len(n.GPUs))
	for i, g := range n.GPUs {
		busOrder[i] = g.Minor
	}
	byMinorGPU := func(m int) *topo.GPU {
		for k := range n.GPUs {
			if n.GPUs[k].Minor == m {
				return &n.GPUs[k]
			}
		}
		t.Fatalf("no minor %d", m)
		return nil
	}
	all := map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}
	for _, c := range []struct {
		name  string
		order []int
	}{{"gres.conf by minor", byMinor}, {"gres.conf in bus order", busOrder}} {
		in, plans := planAll(t, n, 8, all, func(in *Input) { in.SlurmGPUs = c.order })
		checkPlans(t, in, plans)
		for i, p := range plans {
			g := byMinorGPU(c.order[i]) // the GPU Slurm gave as its index i
			want := g.UUID
			if g.Index == i {
				want = fmt.Sprint(i) // CUDA's index i is the same GPU
			}
			if p.GPU == nil || p.GPU.Index != g.Index || p.Visible != want {
				t.Errorf("%s, rank %d: GPU %+v CUDA_VISIBLE_DEVICES=%q, want GPU %d (/dev/nvidia%d) named %q",
					c.name, i, p.GPU, p.Visible, g.Index, g.Minor, want)
			}
		}
	}

	// --gpus-per-task=1 without a device cgroup: Slurm gives the task its
	// index k and CUDA would read k in bus order.
	one := map[string]string{"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "0"}
	_, plans := planAll(t, n, 1, one, func(in *Input) { in.SlurmGPUs = byMinor })
	if g := byMinorGPU(0); plans[0].GPU == nil || plans[0].GPU.Index != g.Index || plans[0].Visible != g.UUID {
		t.Errorf("one GPU, Slurm index 0 = /dev/nvidia0: %+v, want GPU %d named by UUID %s", plans[0], g.Index, g.UUID)
	}
	// With the device cgroup Slurm renumbers: CUDA sees only that GPU, so
	// index 0 is right and left as it is.
	_, plans = planAll(t, n, 1, map[string]string{"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "5"},
		func(in *Input) { in.SlurmGPUs = byMinor })
	if g := byMinorGPU(5); plans[0].GPU == nil || plans[0].GPU.Index != g.Index || plans[0].Visible != "" {
		t.Errorf("one confined GPU: %+v, want GPU %d and CUDA_VISIBLE_DEVICES kept", plans[0], g.Index)
	}
	// Two confined GPUs whose gres.conf order is the reverse of the bus
	// order: CUDA's 0 is the lower bus id, Slurm's 0 the other one.
	_, plans = planAll(t, n, 2, map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "3,2"},
		func(in *Input) { in.SlurmGPUs = byMinor })
	for i, m := range []int{3, 2} {
		if g := byMinorGPU(m); plans[i].GPU == nil || plans[i].GPU.Index != g.Index || plans[i].Visible != g.UUID {
			t.Errorf("confined, reversed, rank %d: %+v, want GPU %d named by UUID", i, plans[i], g.Index)
		}
	}
	// srunwrap.gpu = "keep" leaves the variable and says why it is wrong.
	_, plans = planAll(t, n, 1, one, func(in *Input) {
		in.SlurmGPUs = byMinor
		in.Config.GPU = srunconf.GPUKeep
	})
	if plans[0].Visible != "" || !warned(plans[0], CheckInput) {
		t.Errorf("keep: %+v, want CUDA_VISIBLE_DEVICES left and a warning", plans[0])
	}
}

// A task plans its own rank, not its neighbours: the largest step Slurm
// allows on a node (MaxTasksPerNode) costs a rank what a step of 16 does,
// and the plan is the one PlanNode gives it.
func TestPlanRankCostOfOneRank(t *testing.T) {
	n := shapeNode(t, "dgxh100")
	env := map[string]string{"CUDA_VISIBLE_DEVICES": seq(8), "SLURM_STEP_GPUS": seq(8)}
	allocs := func(ntasks, id int) float64 {
		in := Input{Node: n, Task: taskEnv(t, id, ntasks, env), Allowed: allCPUs(n), JobCPUs: allCPUs(n), Config: defaults(), Brief: true}
		return testing.AllocsPerRun(3, func() { PlanRank(in, id) })
	}
	few, many := allocs(16, 11), allocs(slurm.MaxTasksPerNode-5, slurm.MaxTasksPerNode-10)
	if many > 2*few { // the old planner: one GPU choice per rank, 65528 at least
		t.Errorf("PlanRank: %v allocations for rank %d of %d, %v for rank 11 of 16", many, slurm.MaxTasksPerNode-10, slurm.MaxTasksPerNode-5, few)
	}
	// 2400 ranks, 300 per GPU: GPUs 0-3's 1200 ranks share NUMA node
	// 0's 56 cores, and each GPU's 300 ranks its one HCA. Rank 2395 is GPU
	// 3's last, the last of the 1200: it takes the node's last core.
	in := Input{Node: n, Task: taskEnv(t, 2395, 2400, env), Allowed: allCPUs(n), JobCPUs: allCPUs(n), Config: defaults()}
	p := PlanRank(in, 2395)
	all := PlanNode(in)
	if p.GPU == nil || all[2395].GPU == nil {
		t.Fatalf("rank 2395 has no GPU: %+v", p)
	}
	if a, b := mustJSON(t, p), mustJSON(t, all[2395]); a != b {
		t.Errorf("PlanRank %s\nPlanNode %s", a, b)
	}
	node0 := coresOfNode(n, nodeCPUs(t, n, 0))
	if p.GPU.Index != 3 || !p.CPUs.Equal(node0[len(node0)-1]) || len(p.HCAs) != 1 || !warned(p, "placement") {
		t.Errorf("rank 2395 of 2400: %+v", p)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
