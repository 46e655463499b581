package gpu

import (
	"os"
	"path/filepath"
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

// TestOpenAutoFallback: auto without NVML and without the driver's procfs
// files is the none backend that says why, so a caller can tell a node
// whose driver is gone from an admin's explicit none, which stays None.
func TestOpenAutoFallback(t *testing.T) {
	dir := t.TempDir()
	root := host.NewRoot(dir)
	b, err := Open("auto", root)
	if err != nil || b.Name() != "none" {
		t.Fatalf("auto on an empty root: %v, %v", b, err)
	}
	if devs, err := b.Devices(); err != nil || len(devs) != 0 {
		t.Errorf("fallback Devices: %v, %v", devs, err)
	}
	if why, ok := AutoFallback(b); !ok || why != "/proc/driver/nvidia missing: driver not loaded?" {
		t.Errorf("AutoFallback = %q, %v", why, ok)
	}
	if err := os.MkdirAll(filepath.Join(dir, "proc/driver/nvidia"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = Open("", root)
	if why, ok := AutoFallback(b); !ok || why != "/proc/driver/nvidia/gpus missing" {
		t.Errorf("driver folder without gpus: AutoFallback = %q, %v", why, ok)
	}
	os.MkdirAll(filepath.Join(dir, "proc/driver/nvidia/gpus"), 0o755)
	if b, _ = Open("auto", root); b.Name() != "procfs" {
		t.Errorf("auto with the driver's gpus folder: %s", b.Name())
	}
	for _, spec := range []string{"none", "procfs"} {
		b, _ := Open(spec, host.NewRoot(t.TempDir()))
		if why, ok := AutoFallback(b); ok {
			t.Errorf("explicit %s reads as a fallback (%q)", spec, why)
		}
	}
}

// auto keeps why it did not use NVML on the backend it chose, so that
// gpuprep-gres can say it without opening NVML again.
func TestAutoReason(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc/driver/nvidia/gpus"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Open("auto", host.NewRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	why, ok := AutoReason(b)
	if b.Name() != "procfs" || !ok || !strings.Contains(why, "auto never uses NVML with --root "+root) {
		t.Errorf("auto on a fixture root: %s, AutoReason %q, %v", b.Name(), why, ok)
	}
	if why, ok := AutoReason(OpenProcfs(host.NewRoot(root))); ok {
		t.Errorf("an explicit procfs has an AutoReason: %q", why)
	}
	if why, ok := AutoReason(None{}); ok {
		t.Errorf("an explicit none has an AutoReason: %q", why)
	}
	b, err = Open("auto", host.NewRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if why, ok := AutoReason(b); !ok || !strings.Contains(why, "/proc/driver/nvidia missing") {
		t.Errorf("auto with no driver: AutoReason %q, %v", why, ok)
	}
}
