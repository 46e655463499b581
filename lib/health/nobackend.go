package health

import (
	"fmt"
	"strings"

	"gpuprep/lib/plural"
)

// evalNoBackend is the gpu_count check when --gpu-backend auto found no
// backend that answers (f.NoBackend says why: no NVML, no
// /proc/driver/nvidia). On a node without NVIDIA GPUs that is fine. With
// NVIDIA GPUs on the PCI bus (a driver that failed to load after a kernel
// update), or health.gpu_count set, it fails: a job there cannot use its
// GPUs. An admin's explicit none is not a fallback and skips the check.
func evalNoBackend(f *Facts, e Expect) Result {
	const c = "gpu_count"
	want := e.Health.GPUCount
	switch n := len(f.OnBus); {
	case n > 0:
		them := plural.Word(n, "it", "them")
		why := fmt.Sprintf("%s on the PCI bus (%s) but no GPU backend can list %s (%s)",
			plural.Count(n, "NVIDIA GPU", "NVIDIA GPUs"), busList(f.OnBus), them, f.NoBackend)
		if want > 0 && want != n {
			why += fmt.Sprintf("; want %d (health.gpu_count)", want)
		}
		return fail(c, nodeScope, why)
	case want > 0:
		return fail(c, nodeScope, fmt.Sprintf("no GPU backend can list a GPU (%s), want %d (health.gpu_count)", f.NoBackend, want))
	case f.OnBusErr != nil:
		return unreadable(c, nodeScope, f.OnBusErr)
	}
	return skip(c, nodeScope, fmt.Sprintf("no GPU backend answers (%s) and no NVIDIA GPU is on the PCI bus", f.NoBackend))
}

// busList is PCI bus ids for a one-line reason: up to four, else the first
// three and "...".
func busList(ids []string) string {
	if len(ids) > 4 {
		return strings.Join(ids[:3], ", ") + ", ..."
	}
	return strings.Join(ids, ", ")
}
