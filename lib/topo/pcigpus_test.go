package topo

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// TestNVIDIAGPUsOnBus: NVIDIA VGA and 3D controllers count; their audio
// functions, NVSwitches, other display classes, GPUs bound to vfio-pci
// (passed through to a VM), other vendors' VGA and unreadable devices do
// not.
func TestNVIDIAGPUsOnBus(t *testing.T) {
	dir := t.TempDir()
	for bus, vc := range map[string][2]string{
		"0000:18:00.0": {"0x10de", "0x030200"}, // H100: 3D controller
		"0000:18:00.1": {"0x10de", "0x040300"}, // its audio function
		"0000:2a:00.0": {"0x10de", "0x030000"}, // VGA
		"0000:05:00.0": {"0x10de", "0x068000"}, // NVSwitch
		"0000:06:00.0": {"0x10de", "0x038000"}, // display controller, other
		"0000:9a:00.0": {"0x10de", "0x030200"}, // bound to vfio-pci below
		"0000:ab:00.0": {"0x10de", "0x030200"}, // bound to nvidia below
		"0000:03:00.0": {"0x102b", "0x030000"}, // BMC's Matrox VGA
		"0000:40:00.0": {"0x10de", "garbage"},
		"0000:41:00.0": {"0x10de", ""}, // no class file
	} {
		d := filepath.Join(dir, "sys/bus/pci/devices", bus)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "vendor"), []byte(vc[0]+"\n"), 0o444)
		if vc[1] != "" {
			os.WriteFile(filepath.Join(d, "class"), []byte(vc[1]+"\n"), 0o444)
		}
	}
	for bus, drv := range map[string]string{"0000:9a:00.0": "vfio-pci", "0000:ab:00.0": "nvidia"} {
		os.MkdirAll(filepath.Join(dir, "sys/bus/pci/drivers", drv), 0o755)
		if err := os.Symlink("../../drivers/"+drv, filepath.Join(dir, "sys/bus/pci/devices", bus, "driver")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := NVIDIAGPUsOnBus(host.NewRoot(dir))
	if want := []string{"0000:18:00.0", "0000:2a:00.0", "0000:ab:00.0"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if got, err := NVIDIAGPUsOnBus(host.NewRoot(t.TempDir())); err != nil || len(got) != 0 {
		t.Errorf("no /sys/bus/pci: %v, %v", got, err)
	}
	if got, err := NVIDIAGPUsOnBus(host.NewRoot(testroot.Shared(t, "h200x2"))); err != nil || !slices.Equal(got, []string{"0000:00:06.0", "0000:00:07.0"}) {
		t.Errorf("h200x2: %v, %v", got, err)
	}
}
