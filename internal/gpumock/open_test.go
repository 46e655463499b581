package gpumock

import (
	"strings"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

func TestOpen(t *testing.T) {
	fixture := fixtureRoot(t, "dgxh100")
	empty := host.NewRoot(t.TempDir())
	for _, tc := range []struct {
		spec string
		root host.Root
		name string
		gpus int
	}{
		{"procfs", fixture, "procfs", 8},
		{"none", fixture, "none", 0},
		{"mock:dgxh100", empty, "mock:dgxh100", 8},
		// A fixture root never gets NVML (it describes this machine).
		{"auto", fixture, "procfs", 8},
		{"", fixture, "procfs", 8},
		{"auto", empty, "none", 0},
	} {
		b, err := gpu.Open(tc.spec, tc.root)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.spec, err)
			continue
		}
		devs, err := b.Devices()
		if b.Name() != tc.name || err != nil || len(devs) != tc.gpus {
			t.Errorf("Open(%q) = %s with %d GPUs (%v), want %s with %d", tc.spec, b.Name(), len(devs), err, tc.name, tc.gpus)
		}
		b.Close()
	}
	_, err := gpu.Open("cuda", empty)
	if err == nil || !strings.Contains(err.Error(), "auto, procfs, none, mock:dgxa100, mock:dgxh100, mock:dgxh200, mock:dgxb200, nvml") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := gpu.Open("mock:dgx2", empty); err == nil {
		t.Error("mock:dgx2 opened")
	}
}
