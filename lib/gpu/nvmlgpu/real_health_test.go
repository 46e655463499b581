package nvmlgpu

import (
	"errors"
	"os"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// TestRealNVMLHealthFacts runs only where GPUPREP_REAL_NVML=1 (a GPU node):
// read-only, it reads the health facts (driver version, agreeing with
// procfs; throttle reasons; NVLink counts; processes; the recovery action,
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) of every GPU.
func TestRealNVMLHealthFacts(t *testing.T) {
	if os.Getenv("GPUPREP_REAL_NVML") != "1" {
		t.Skip("set GPUPREP_REAL_NVML=1 on a GPU node")
	}
	root := host.NewRoot("/")
	b, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, err := b.DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	pv, err := gpu.OpenProcfs(root).DriverVersion()
	if err != nil || pv != v {
		t.Errorf("driver: nvml %q, procfs %q (%v)", v, pv, err)
	}
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		tr, err := b.ThrottleReasons(d.Index)
		if err != nil {
			t.Errorf("GPU %d throttle reasons: %v", d.Index, err)
		}
		active, total, err := b.NVLinks(d.Index)
		if err != nil {
			t.Logf("GPU %d NVLinks: %v", d.Index, err)
		}
		pids, err := b.Processes(d.Index)
		if err != nil {
			t.Errorf("GPU %d processes: %v", d.Index, err)
		}
		ra, err := b.RecoveryAction(d.Index)
		if err != nil && !errors.Is(err, gpu.ErrUnsupported) {
			t.Errorf("GPU %d recovery action: %v", d.Index, err)
		}
		t.Logf("GPU %d (%s): driver %s, throttle %#x %v, NVLinks %d of %d active, processes %v, recovery action %v (%v)", d.Index, d.BusID, v, tr, gpu.ThrottleNames(tr), active, total, pids, ra, err)
	}
}
