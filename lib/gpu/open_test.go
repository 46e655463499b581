package gpu

import (
	"strings"
	"testing"

	"gpuprep/lib/host"
)

func TestNone(t *testing.T) {
	var b Backend = None{}
	if devs, err := b.Devices(); err != nil || len(devs) != 0 {
		t.Errorf("Devices: %v %v", devs, err)
	}
	if _, ok := As[Setter](b); ok {
		t.Error("none has setters")
	}
}

func TestProcfsCapabilities(t *testing.T) {
	var b Backend = OpenProcfs(host.NewRoot(t.TempDir()))
	if _, ok := As[SettingsReader](b); ok {
		t.Error("procfs reads settings")
	}
	if _, ok := As[Setter](b); ok {
		t.Error("procfs has setters")
	}
	if _, ok := As[MIGReader](b); !ok {
		t.Error("procfs reads no MIG state")
	}
}

// Without the mock package linked in, mock:<model> names the build tag that
// has it; an unknown name lists what this program accepts.
func TestOpenUnregistered(t *testing.T) {
	root := host.NewRoot(t.TempDir())
	_, err := Open("mock:dgxh100", root)
	if err == nil || !strings.Contains(err.Error(), "-tags gpuprep_mock") {
		t.Errorf("mock without the mocks: %v", err)
	}
	_, err = Open("cuda", root)
	if err == nil || !strings.Contains(err.Error(), `unknown backend "cuda" (want one of auto, procfs, none)`) {
		t.Errorf("unknown spec: %v", err)
	}
}
