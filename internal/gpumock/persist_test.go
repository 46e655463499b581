package gpumock

import (
	"reflect"
	"testing"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// TestMockSettingsPersistAcrossOpens: a prolog and its epilog are two
// processes; on a fixture root the mock GPU keeps its settings between them
// as a real GPU does.
func TestMockSettingsPersistAcrossOpens(t *testing.T) {
	root := host.NewRoot(t.TempDir())
	a, err := Open("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetPersistence(3, false); err != nil {
		t.Fatal(err)
	}
	if err := a.SetComputeMode(3, gpu.ComputeExclusiveProcess); err != nil {
		t.Fatal(err)
	}
	b, err := Open("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Settings(3, gpu.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if s.Persistence || s.ComputeMode != gpu.ComputeExclusiveProcess {
		t.Errorf("second open sees %+v", s)
	}
	if s0, _ := b.Settings(0, gpu.AllFields); !s0.Persistence {
		t.Error("another GPU changed")
	}
	// A fresh root is a freshly booted node.
	c, _ := Open("dgxh100", host.NewRoot(t.TempDir()))
	if s, _ := c.Settings(3, gpu.AllFields); !s.Persistence {
		t.Error("fresh root does not start with persistence on")
	}
}

// Light lists the GPUs from the driver's procfs files where the root has
// them (no NVML call, no NVLinks), and from NVML without NVLinks elsewhere;
// either way the GPUs, their order and their handles are the same.
func TestLight(t *testing.T) {
	full, err := Open("dgxh100", fixtureRoot(t, "dgxh100"))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	with, _ := full.Devices()
	for _, root := range []host.Root{fixtureRoot(t, "dgxh100"), host.NewRoot(t.TempDir())} {
		b, err := Open("dgxh100", root)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Light()
		without, err := b.Devices()
		if err != nil || len(without) != len(with) {
			t.Fatalf("light: %d GPUs, %v", len(without), err)
		}
		for i := range with {
			if without[i].NVLinks != nil || without[i].UUID != with[i].UUID || without[i].Index != i || without[i].BusID != with[i].BusID {
				t.Errorf("GPU %d: full %+v, light %+v", i, with[i], without[i])
			}
		}
		// The handle of GPU 5, opened by bus id, is GPU 5's.
		if err := b.SetPersistence(5, false); err != nil {
			t.Fatal(err)
		}
		s5, _ := b.Settings(5, gpu.FieldPersistence)
		s4, _ := b.Settings(4, gpu.FieldPersistence)
		if s5.Persistence || !s4.Persistence {
			t.Errorf("persistence: GPU 5 %v, GPU 4 %v", s5.Persistence, s4.Persistence)
		}
	}
}

// MIG reads one GPU's MIG state from NVML, cap minors included, as the
// inventory lists it (the dgxa100 shape has GPU 0 in MIG mode).
func TestMIGReader(t *testing.T) {
	b, err := Open("dgxa100", fixtureRoot(t, "dgxa100"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs[0].MIG.Devices) == 0 {
		t.Fatal("GPU 0 of dgxa100 has no MIG devices")
	}
	for i := range devs {
		m, err := b.MIG(i)
		if err != nil || !reflect.DeepEqual(m, devs[i].MIG) {
			t.Errorf("MIG(%d) = %+v, %v; want %+v", i, m, err, devs[i].MIG)
		}
	}
}
