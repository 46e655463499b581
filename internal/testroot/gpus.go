package testroot

import (
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// GPUs lists the GPUs of an unpacked root as the procfs backend reads them
// (/proc/driver/nvidia/gpus), in PCI bus order.
func GPUs(t testing.TB, root string) []gpu.Device {
	t.Helper()
	b, err := gpu.Open("procfs", host.NewRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	return devs
}
