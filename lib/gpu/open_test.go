package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gpuprep/lib/host"
)

// libnvidia-ml.so.1 is absent here (no driver); nvml must say so plainly.
func TestNVMLWithoutDriver(t *testing.T) {
	b, err := OpenNVML(host.NewRoot("/"))
	if err == nil {
		b.Close()
		t.Skip("this machine has libnvidia-ml and a working NVML")
	}
	if !errors.Is(err, ErrNoNVML) && !strings.HasPrefix(err.Error(), "nvml: init: ") {
		t.Fatalf("error %v", err)
	}
	if errors.Is(err, ErrNoNVML) && err.Error() != "nvml: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)" {
		t.Errorf("error text %q", err)
	}
}

func TestNVMLInitErrors(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND: "nvml: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)",
		nvml.ERROR_DRIVER_NOT_LOADED: "nvml: init: ",
		nvml.ERROR_NO_PERMISSION:     "nvml: init: ",
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		_, err := NewNVML(lib, host.NewRoot("/"), "test")
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", ret, err, want)
		}
	}
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
		b, err := Open(tc.spec, tc.root)
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
	_, err := Open("cuda", empty)
	if err == nil || !strings.Contains(err.Error(), "auto, nvml, procfs, none, mock:dgxa100, mock:dgxh100, mock:dgxh200, mock:dgxb200") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := Open("mock:dgx2", empty); err == nil {
		t.Error("mock:dgx2 opened")
	}
}

// On the host, auto takes NVML when it works and falls back to procfs (or
// none) when libnvidia-ml is missing, as it is here.
func TestOpenAutoOnHost(t *testing.T) {
	b, err := Open("auto", host.NewRoot("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want := "none"
	if host.NewRoot("/").Exists(procGPUs) {
		want = "procfs"
	}
	if nb, nerr := OpenNVML(host.NewRoot("/")); nerr == nil {
		nb.Close()
		want = "nvml"
	}
	if b.Name() != want {
		t.Errorf("auto chose %s, want %s", b.Name(), want)
	}
}

func TestNone(t *testing.T) {
	var b Backend = None{}
	if devs, err := b.Devices(); err != nil || len(devs) != 0 {
		t.Errorf("Devices: %v %v", devs, err)
	}
	if err := b.SetPersistence(0, true); err == nil {
		t.Error("SetPersistence on none worked")
	}
}
