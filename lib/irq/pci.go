package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// PCIDevicesDir is sysfs's folder of PCI functions by bus id.
const PCIDevicesDir = "/sys/bus/pci/devices"

// Device is the interrupts and NUMA place of one PCI function (a GPU, an
// HCA port).
type Device struct {
	BusID string // "0000:18:00.0"
	// MSI are the names of msi_irqs/: the IRQs of its MSI and MSI-X
	// vectors, ascending; empty when the directory is absent (no MSI
	// enabled, no driver bound).
	MSI []int
	// INTx is the irq file: its legacy interrupt line, 0 for none. A
	// device using MSI-X still shows its pin's line there, shared with
	// others and unused by it.
	INTx int
	// NUMANode is numa_node; -1 when the platform does not say (VMs) or
	// the file is absent.
	NUMANode int
	// LocalCPUs is local_cpulist: the CPUs of its NUMA node (all CPUs
	// when it has none); empty when the file is absent.
	LocalCPUs cpuset.Set
}

// IRQs are the IRQs the device raises: its MSI vectors when it has any,
// else its legacy line when it has one. irqbalance draws the same line
// (classify.c, build_one_dev_entry).
func (d Device) IRQs() []int {
	if len(d.MSI) > 0 {
		return slices.Clone(d.MSI)
	}
	if d.INTx > 0 {
		return []int{d.INTx}
	}
	return nil
}

// DevicePath is a node path under a PCI function's sysfs folder.
func DevicePath(busID, rel string) string {
	return PCIDevicesDir + "/" + busID + "/" + rel
}

// ReadDevice reads /sys/bus/pci/devices/<busID>/ msi_irqs/, irq,
// numa_node and local_cpulist. A missing device is an error wrapping
// fs.ErrNotExist; missing msi_irqs/, numa_node or local_cpulist are
// tolerated (none, -1, empty), a missing irq file reads as 0; garbage in
// any is an error naming the file.
func ReadDevice(r host.Root, busID string) (Device, error) {
	d := Device{BusID: busID, NUMANode: -1}
	if err := checkBusID(busID); err != nil {
		return d, err
	}
	if _, err := r.ReadDir(PCIDevicesDir + "/" + busID); err != nil {
		return d, err
	}
	dir := DevicePath(busID, "msi_irqs")
	switch names, err := r.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return d, err
	default:
		if d.MSI, err = ParseMSIIRQs(dir, names); err != nil {
			return d, err
		}
	}
	var err error
	if d.INTx, err = readInt(r, DevicePath(busID, "irq"), 0, 0, MaxIRQ); err != nil {
		return d, err
	}
	if d.NUMANode, err = readInt(r, DevicePath(busID, "numa_node"), -1, -1, 1<<16); err != nil {
		return d, err
	}
	p := DevicePath(busID, "local_cpulist")
	switch s, err := r.ReadString(p); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return d, err
	default:
		if d.LocalCPUs, err = ParseCPUList(p, s); err != nil {
			return d, err
		}
	}
	return d, nil
}

// ParseMSIIRQs reads the entry names of a device's msi_irqs/ folder: one
// per vector, named by its IRQ number (files holding "msi" or "msix" on
// Linux 3.12 and later, folders before). dir names the folder in errors.
func ParseMSIIRQs(dir string, names []string) ([]int, error) {
	irqs := make([]int, 0, len(names))
	for _, n := range names {
		v, err := parseIRQ(n)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %w", dir, err)
		}
		irqs = append(irqs, v)
	}
	slices.Sort(irqs)
	return slices.Compact(irqs), nil
}

// readInt reads a one-integer file, def when it is absent, and refuses a
// value outside lo..hi.
func readInt(r host.Root, p string, def, lo, hi int) (int, error) {
	v, err := r.ReadInt(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return def, nil
	case err != nil:
		return 0, err
	case v < lo || v > hi:
		return 0, fmt.Errorf("%s: %d is out of range (want %d to %d)", p, v, lo, hi)
	}
	return v, nil
}

// checkBusID refuses a bus id that is not one sysfs name ("0000:18:00.0"):
// hex digits, ':' and '.', so it cannot climb out of the folder.
func checkBusID(id string) error {
	if id == "" || len(id) > 32 || strings.Trim(id, "0123456789abcdefABCDEF:.") != "" || strings.Contains(id, "..") {
		return fmt.Errorf("PCI bus id %q: want one like 0000:18:00.0", textfmt.Clip(id, 60))
	}
	return nil
}
