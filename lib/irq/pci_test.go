package irq

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestReadDevice(t *testing.T) {
	n := twoSocket(t)
	n.device(fixDev{bdf: "0000:00:04.0", numa: -1, local: "0-15", intx: 11})
	n.device(fixDev{bdf: "0000:00:05.0", noNUMA: true, local: "0-15"})
	r := n.finish()
	for _, tc := range []struct {
		bdf   string
		msi   []int
		intx  int
		numa  int
		local string
		irqs  []int
	}{
		// The GPU's irq file names its INTx pin's line (16, shared with
		// the HCA's): unused, since it has MSI-X vectors.
		{gpu0, []int{60, 70}, 16, 0, "0-7", []int{60, 70}},
		{hca0, []int{40, 41, 42, 43, 44}, 16, 0, "0-7", []int{40, 41, 42, 43, 44}},
		{gpu1, []int{61}, 17, 1, "8-15", []int{61}},
		// A VM's device: no NUMA node, legacy interrupt only.
		{"0000:00:04.0", nil, 11, -1, "0-15", []int{11}},
		// No numa_node file, no interrupt at all.
		{"0000:00:05.0", nil, 0, -1, "0-15", nil},
	} {
		d, err := ReadDevice(r, tc.bdf)
		if err != nil {
			t.Fatalf("%s: %v", tc.bdf, err)
		}
		if d.BusID != tc.bdf || !slices.Equal(d.MSI, tc.msi) || d.INTx != tc.intx || d.NUMANode != tc.numa ||
			d.LocalCPUs.String() != tc.local || !slices.Equal(d.IRQs(), tc.irqs) {
			t.Errorf("%s = %+v (IRQs %v)", tc.bdf, d, d.IRQs())
		}
	}
	if _, err := ReadDevice(r, "0000:ff:00.0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing device: %v", err)
	}
}

// TestReadDeviceGarbage: errors name the file or folder.
func TestReadDeviceGarbage(t *testing.T) {
	for _, tc := range []struct {
		rel, content, want string
	}{
		{"numa_node", "zero\n", "/sys/bus/pci/devices/0000:9a:00.0/numa_node: want an integer"},
		{"numa_node", "-2\n", "/sys/bus/pci/devices/0000:9a:00.0/numa_node: -2 is out of range"},
		{"irq", "-1\n", "/sys/bus/pci/devices/0000:9a:00.0/irq: -1 is out of range"},
		{"irq", "sixteen\n", "/sys/bus/pci/devices/0000:9a:00.0/irq: want an integer"},
		{"local_cpulist", "0-x\n", "/sys/bus/pci/devices/0000:9a:00.0/local_cpulist: cpu list"},
		{"msi_irqs/vector", "msix\n", "/sys/bus/pci/devices/0000:9a:00.0/msi_irqs: entry \"vector\" is not an IRQ number"},
		{"msi_irqs/-5", "msix\n", "/sys/bus/pci/devices/0000:9a:00.0/msi_irqs: entry \"-5\" is not an IRQ number"},
	} {
		n := twoSocket(t)
		n.write(DevicePath(gpu1, tc.rel), tc.content, 0o644)
		_, err := ReadDevice(n.r, gpu1)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q: %v; want %q...", tc.rel, tc.content, err, tc.want)
		}
	}
	r := twoSocket(t).r
	for _, bad := range []string{"", "..", "../../etc", "0000:18:00.0/..", "0000:18:00.0/msi_irqs", "x"} {
		if _, err := ReadDevice(r, bad); err == nil || !strings.Contains(err.Error(), "want one like 0000:18:00.0") {
			t.Errorf("ReadDevice(%q) = %v", bad, err)
		}
	}
}

// An msi_irqs folder the driver tore down while it was listed reads as
// none; one that cannot be read is an error.
func TestReadDeviceMSIFolder(t *testing.T) {
	n := twoSocket(t)
	if err := os.RemoveAll(n.r.Path(DevicePath(gpu1, "msi_irqs"))); err != nil {
		t.Fatal(err)
	}
	if d, err := ReadDevice(n.r, gpu1); err != nil || d.MSI != nil || !slices.Equal(d.IRQs(), []int{17}) {
		t.Errorf("no msi_irqs: %+v, %v", d, err)
	}
	n.write(DevicePath(gpu1, "msi_irqs"), "a file\n", 0o644)
	if _, err := ReadDevice(n.r, gpu1); err == nil || !strings.Contains(err.Error(), "msi_irqs") {
		t.Errorf("msi_irqs a file: %v", err)
	}
}
