package nvmlgpu

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// TestRealNVML runs only where GPUPREP_REAL_NVML=1 (a GPU node): read-only,
// it lists the GPUs through NVML and through procfs, checks that both agree,
// and reads every GPU's settings and health. It never calls a setter.
func TestRealNVML(t *testing.T) {
	if os.Getenv("GPUPREP_REAL_NVML") != "1" {
		t.Skip("set GPUPREP_REAL_NVML=1 on a GPU node")
	}
	root := host.NewRoot("/")
	t0 := time.Now()
	b, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t1 := time.Now()
	ndevs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	pdevs, err := gpu.OpenProcfs(root).Devices()
	if err != nil {
		t.Fatal(err)
	}
	t3 := time.Now()
	t.Logf("nvml init %v, Devices %v (%d GPUs); procfs Devices %v", t1.Sub(t0), t2.Sub(t1), len(ndevs), t3.Sub(t2))
	out, _ := json.MarshalIndent(ndevs, "", "  ")
	t.Logf("nvml devices: %s", out)
	if len(pdevs) != len(ndevs) {
		t.Fatalf("procfs %d GPUs, nvml %d", len(pdevs), len(ndevs))
	}
	for i := range ndevs {
		n, p := ndevs[i], pdevs[i]
		if n.Index != p.Index || n.Minor != p.Minor || n.UUID != p.UUID || n.BusID != p.BusID || n.Name != p.Name ||
			n.MIG.Current != p.MIG.Current || len(n.MIG.Devices) != len(p.MIG.Devices) {
			t.Errorf("GPU %d:\nnvml   %+v\nprocfs %+v", i, n, p)
		}
		s, err := b.Settings(n.Index, gpu.AllFields)
		if err != nil {
			t.Errorf("Settings(%d): %v", n.Index, err)
		}
		h, err := b.Health(n.Index)
		if err != nil {
			t.Errorf("Health(%d): %v", n.Index, err)
		}
		t.Logf("GPU %d settings %+v\nhealth %+v", n.Index, s, h)
	}
	t4 := time.Now()
	if _, err := b.Devices(); err != nil {
		t.Fatal(err)
	}
	t.Logf("second Devices %v", time.Since(t4))
}
