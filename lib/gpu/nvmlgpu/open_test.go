package nvmlgpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// libnvidia-ml.so.1 is absent here (no driver); nvml must say so plainly.
func TestNVMLWithoutDriver(t *testing.T) {
	b, err := Open(host.NewRoot("/"))
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
		_, err := New(lib, host.NewRoot("/"), Options{Name: "test"})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", ret, err, want)
		}
	}
}

// On the host, auto takes NVML when it works and falls back to procfs (or
// none) when libnvidia-ml is missing, as it is here.
func TestOpenAutoOnHost(t *testing.T) {
	b, err := gpu.Open("auto", host.NewRoot("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want := "none"
	if host.NewRoot("/").Exists("/proc/driver/nvidia/gpus") {
		want = "procfs"
	}
	if nb, nerr := Open(host.NewRoot("/")); nerr == nil {
		nb.Close()
		want = "nvml"
	}
	if b.Name() != want {
		t.Errorf("auto chose %s, want %s", b.Name(), want)
	}
}
