package bind

import (
	"encoding/json"
	"fmt"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
	"gpuprep/lib/srunconf"
)

// Every fixture shape, as srunwrap gets it (nodedesc.ForTask: the same
// facts from the description or from sysfs), with one rank per GPU and
// with two: every rank gets a GPU of its own, CPUs and no input warning,
// and the plans keep the invariants checkPlans holds (disjoint whole
// cores in the pool, inside the GPU's node when the pool has CPUs there,
// memory never on a CPU-less node).
func TestEveryShape(t *testing.T) {
	for _, shape := range testroot.Names() {
		t.Run(shape, func(t *testing.T) {
			n, _, src, err := nodedesc.ForTask(host.NewRoot(testroot.Shared(t, shape)))
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if len(n.GPUs) == 0 {
				t.Fatalf("%s has no GPU", shape)
			}
			for _, per := range []int{1, 2} {
				ranks := per * len(n.GPUs)
				in, plans := planAll(t, n, ranks, map[string]string{"CUDA_VISIBLE_DEVICES": seq(len(n.GPUs)), "SLURM_STEP_GPUS": seq(len(n.GPUs))}, nil)
				checkPlans(t, in, plans)
				for i, p := range plans {
					want := fmt.Sprint(i % len(n.GPUs))
					if len(n.GPUs) == 1 {
						want = "" // the one visible GPU: nothing to narrow
					}
					if p.GPU == nil || p.GPU.Index != n.GPUs[i%len(n.GPUs)].Index || p.Visible != want {
						t.Errorf("%d ranks, rank %d: GPU %+v visible %q", ranks, i, p.GPU, p.Visible)
					}
					if p.CPUs.IsEmpty() || warned(p, CheckInput) {
						t.Errorf("%d ranks, rank %d: CPUs %q (%s), warnings %v", ranks, i, p.CPUs, p.CPUsFrom, p.Warnings)
					}
				}
			}
		})
	}
}

// Brief (srunwrap's per-task path) changes nothing but the From texts:
// every shape, two ranks per GPU, with each CPU binding and memory
// setting, a task bound narrower than the job (cpu_binding keep keeps it)
// and GPU memory nodes on or off.
func TestBriefSamePlan(t *testing.T) {
	for _, shape := range testroot.Names() {
		n := shapeNode(t, shape)
		all := allCPUs(n)
		for _, cfg := range []srunconf.SrunwrapSection{
			defaults(),
			{CPUBinding: srunconf.CPUReplace, Memory: srunconf.MemPreferred, GPUMemoryNodes: true},
			{CPUBinding: srunconf.CPUOff, Memory: srunconf.MemOff},
		} {
			for _, allowed := range []cpuset.Set{all, cpuset.New(all.Min())} {
				in := Input{Node: n, Task: taskEnv(t, 0, 2*len(n.GPUs), map[string]string{"CUDA_VISIBLE_DEVICES": seq(len(n.GPUs))}),
					Allowed: allowed, JobCPUs: all, Config: cfg}
				full := PlanNode(in)
				in.Brief = true
				brief := PlanNode(in)
				for i := range full {
					if full[i].GPU != nil {
						g := *full[i].GPU
						g.From = ""
						full[i].GPU = &g
					}
					full[i].CPUsFrom, full[i].MemFrom, full[i].HCAFrom = "", "", ""
					brief[i].CPUsFrom, brief[i].MemFrom, brief[i].HCAFrom = "", "", ""
				}
				a, _ := json.Marshal(full)
				b, _ := json.Marshal(brief)
				if string(a) != string(b) {
					t.Errorf("%s, %+v, allowed %s: Brief changes the plan:\n%s\n%s", shape, cfg, allowed, a, b)
				}
			}
		}
	}
}
