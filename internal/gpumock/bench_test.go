package gpumock

import (
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// BenchmarkMockDevices is what a process pays for the mock: build the
// dgxh100 server, list its GPUs, close.
func BenchmarkMockDevices(b *testing.B) {
	root := host.NewRoot(b.TempDir())
	for b.Loop() {
		m, err := Open("dgxh100", root)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Devices(); err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// BenchmarkProcfsDevices lists the GPUs of the dgxa100 fixture (8 GPUs, one
// with MIG instances) through procfs.
func BenchmarkProcfsDevices(b *testing.B) {
	root := fixtureRoot(b, "dgxa100")
	p := gpu.OpenProcfs(root)
	for b.Loop() {
		if _, err := p.Devices(); err != nil {
			b.Fatal(err)
		}
	}
}
