package gpumock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// writeRoot makes a root in a temp folder holding files (node path ->
// content); a path ending in "/" makes a folder.
func writeRoot(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return host.NewRoot(dir)
}

// information is a driver information file for one GPU.
func information(model, uuid, bus, minor string) string {
	return "Model: \t\t " + model + "\nGPU UUID: \t " + uuid + "\nBus Location: \t " + bus + "\nDevice Minor: \t " + minor + "\n"
}

func TestOpen(t *testing.T) {
	fixture := writeRoot(t, map[string]string{
		"/proc/driver/nvidia/gpus/0000:18:00.0/information": information("NVIDIA H100 80GB HBM3", "GPU-a", "0000:18:00.0", "0"),
	})
	empty := writeRoot(t, map[string]string{"/sys/": ""})
	for _, tc := range []struct {
		spec string
		root host.Root
		name string
		gpus int
	}{
		{"procfs", fixture, "procfs", 1},
		{"none", fixture, "none", 0},
		{"mock:dgxh100", empty, "mock:dgxh100", 8},
		// A fixture root never gets NVML (it describes this machine).
		{"auto", fixture, "procfs", 1},
		{"", fixture, "procfs", 1},
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

// A program built without the mocks names the build tag that has them.
func TestOpenMockUnregistered(t *testing.T) {
	// This test binary has the mocks; what a production binary says is
	// checked by the end-to-end test of the built programs.
	if _, err := gpu.Open("mock:dgxh100", host.NewRoot(t.TempDir())); err != nil {
		t.Fatal(err)
	}
}
