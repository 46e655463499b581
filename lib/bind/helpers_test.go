package bind

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gpuprep/lib/srunconf"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/slurm"
	"gpuprep/lib/topo"
)

var (
	nodesMu sync.Mutex
	nodes   = map[string][]byte{}
)

// shapeNode discovers a fixture shape once per test binary and returns a
// fresh copy each call, so that a test may change what it gets.
func shapeNode(t testing.TB, shape string) *topo.Node {
	t.Helper()
	nodesMu.Lock()
	defer nodesMu.Unlock()
	b, ok := nodes[shape]
	if !ok {
		root := host.NewRoot(testroot.Shared(t, shape))
		n, err := topo.Discover(root, gpu.OpenProcfs(root), topo.Options{NICs: true})
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		if b, err = json.Marshal(n); err != nil {
			t.Fatal(err)
		}
		nodes[shape] = b
	}
	var n topo.Node
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// taskEnv builds a slurm.Task for local rank id of ntasks on one node from
// extra variables ("CUDA_VISIBLE_DEVICES" ...).
func taskEnv(t testing.TB, id, ntasks int, env map[string]string) slurm.Task {
	t.Helper()
	e := map[string]string{
		"SLURM_PROCID": strconv.Itoa(id), "SLURM_LOCALID": strconv.Itoa(id), "SLURM_NODEID": "0",
		"SLURM_NTASKS": strconv.Itoa(ntasks), "SLURM_STEP_TASKS_PER_NODE": strconv.Itoa(ntasks),
	}
	for k, v := range env {
		e[k] = v
	}
	task, err := slurm.TaskFromEnv(func(k string) string { return e[k] })
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func seq(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return strings.Join(s, ",")
}

// nodeCPUs returns NUMA node id's CPUs.
func nodeCPUs(t testing.TB, n *topo.Node, id int) cpuset.Set {
	t.Helper()
	nd := numaByID(n, id)
	if nd == nil {
		t.Fatalf("no NUMA node %d", id)
	}
	return nd.CPUs
}

// coresOfNode returns NUMA node id's cores (their CPUs), in core order.
func coresOfNode(n *topo.Node, cpus cpuset.Set) []cpuset.Set {
	var out []cpuset.Set
	for _, c := range n.Cores {
		if x := c.CPUs.Intersection(cpus); !x.IsEmpty() {
			out = append(out, x)
		}
	}
	return out
}

// checkPlans checks what every plan must give, whatever the shape: CPU
// runs inside the pool, pairwise disjoint, of whole cores (as the pool
// has them), inside the GPU's NUMA node whenever the pool has CPUs there,
// and about as large as each other among ranks sharing a node; memory on
// the CPUs' nodes, never a CPU-less node unless configured.
func checkPlans(t *testing.T, in Input, plans []Plan) {
	t.Helper()
	n := in.Node
	pool := in.pool()
	sizes := map[int][]int{} // NUMA node -> run sizes in cores
	for i, p := range plans {
		if p.LocalID != i {
			t.Errorf("plan %d has LocalID %d", i, p.LocalID)
		}
		if p.CPUs.IsEmpty() {
			continue
		}
		if !p.CPUs.IsSubsetOf(pool) {
			t.Errorf("rank %d: CPUs %s outside the pool %s", i, p.CPUs, pool)
		}
		for j := i + 1; j < len(plans); j++ {
			if x := p.CPUs.Intersection(plans[j].CPUs); !x.IsEmpty() {
				t.Errorf("ranks %d and %d share CPUs %s", i, j, x)
			}
		}
		for _, c := range n.Cores {
			have := c.CPUs.Intersection(pool)
			if x := have.Intersection(p.CPUs); !x.IsEmpty() && !x.Equal(have) {
				t.Errorf("rank %d: CPUs %s split core %d (%s)", i, p.CPUs, c.ID, have)
			}
		}
		if p.GPU != nil {
			tg := gpuTarget(n, gpuByIndex(n, p.GPU.Index))
			if !tg.cpus.Intersection(pool).IsEmpty() && !p.CPUs.IsSubsetOf(tg.cpus) {
				t.Errorf("rank %d: CPUs %s outside GPU %d's %s (%s)", i, p.CPUs, p.GPU.Index, tg.from, tg.cpus)
			}
			if tg.node >= 0 {
				sizes[tg.node] = append(sizes[tg.node], len(coresOfNode(n, p.CPUs)))
			}
		}
		for _, m := range p.MemNodes {
			nd := numaByID(n, m)
			if nd == nil {
				t.Errorf("rank %d: memory on node %d, not a node", i, m)
				continue
			}
			if nd.CPUs.IsEmpty() && !in.Config.GPUMemoryNodes {
				t.Errorf("rank %d: memory bound to CPU-less node %d", i, m)
			}
			if !nd.CPUs.IsEmpty() && nd.CPUs.Intersection(p.CPUs).IsEmpty() {
				t.Errorf("rank %d: memory node %d has none of its CPUs %s", i, m, p.CPUs)
			}
		}
	}
	for node, s := range sizes {
		lo, hi := s[0], s[0]
		for _, v := range s {
			lo, hi = min(lo, v), max(hi, v)
		}
		if hi-lo > 1 {
			t.Errorf("NUMA node %d: uneven runs of %v cores", node, s)
		}
	}
}

func warned(p Plan, check string) bool {
	for _, w := range p.Warnings {
		if w.Check == check {
			return true
		}
	}
	return false
}

func defaults() srunconf.SrunwrapSection {
	return srunconf.SrunwrapSection{GPU: srunconf.GPUNarrow, CPUBinding: srunconf.CPUKeep, Memory: srunconf.MemBind}
}

// planAll plans ranks 0..ntasks-1 each from its own environment with
// PlanRank, checking that PlanNode agrees.
func planAll(t *testing.T, n *topo.Node, ntasks int, env map[string]string, mod func(*Input)) (Input, []Plan) {
	t.Helper()
	var plans []Plan
	var in Input
	for i := 0; i < ntasks; i++ {
		in = Input{Node: n, Task: taskEnv(t, i, ntasks, env), Config: defaults()}
		if mod != nil {
			mod(&in)
		}
		plans = append(plans, PlanRank(in, i))
	}
	all := PlanNode(in)
	a, _ := json.Marshal(all)
	b, _ := json.Marshal(plans)
	if string(a) != string(b) {
		t.Errorf("PlanNode differs from PlanRank:\n%s\n%s", a, b)
	}
	return in, plans
}
