package bind

import (
	"fmt"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
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
					if p.GPU == nil || p.GPU.Index != n.GPUs[i%len(n.GPUs)].Index || p.Visible != fmt.Sprint(i%len(n.GPUs)) {
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
