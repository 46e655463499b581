package gpu

import (
	"testing"

	"gpuprep/lib/host"
)

// TestMockSettingsPersistAcrossOpens: a prolog and its epilog are two
// processes; on a fixture root the mock GPU keeps its settings between them
// as a real GPU does.
func TestMockSettingsPersistAcrossOpens(t *testing.T) {
	root := host.NewRoot(t.TempDir())
	a, err := OpenMock("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetPersistence(3, false); err != nil {
		t.Fatal(err)
	}
	if err := a.SetComputeMode(3, ComputeExclusiveProcess); err != nil {
		t.Fatal(err)
	}
	b, err := OpenMock("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Settings(3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Persistence || s.ComputeMode != ComputeExclusiveProcess {
		t.Errorf("second open sees %+v", s)
	}
	if s0, _ := b.Settings(0); !s0.Persistence {
		t.Error("another GPU changed")
	}
	// A fresh root is a freshly booted node.
	c, _ := OpenMock("dgxh100", host.NewRoot(t.TempDir()))
	if s, _ := c.Settings(3); !s.Persistence {
		t.Error("fresh root does not start with persistence on")
	}
}

func TestWithoutNVLinks(t *testing.T) {
	b, err := OpenMock("dgxh100", host.NewRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	with, _ := b.Devices()
	WithoutNVLinks(b)
	without, _ := b.Devices()
	if with[0].NVLinks == nil || without[0].NVLinks != nil || without[0].UUID != with[0].UUID || !without[0].CPUAffinity.Equal(with[0].CPUAffinity) {
		t.Errorf("with %v / without %v", with[0].NVLinks, without[0].NVLinks)
	}
}
