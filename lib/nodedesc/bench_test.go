package nodedesc

import (
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// BenchmarkForTask is what each rank pays for the node: read and decode the
// dgxh100 description (and check the boot id).
func BenchmarkForTask(b *testing.B) {
	dir := testroot.Unpack(b, "dgxh100")
	r := host.NewRoot(dir)
	setBoot(b, dir, bootA)
	d, err := Build(r, gpu.OpenProcfs(r), Settings{}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := Write(r, d); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, d, _, err := ForTask(r); err != nil || d == nil {
			b.Fatal(err)
		}
	}
}
