package topo

import (
	"path"

	"gpuprep/lib/host"
)

// PCI ids NVIDIAGPUsOnBus looks for.
const (
	pciVendorNVIDIA   = 0x10de
	pciClassDisplay   = 0x03 // base class: VGA, XGA, 3D controller, other display
	pciDevicesSysPath = "/sys/bus/pci/devices"
)

// NVIDIAGPUsOnBus lists the bus ids ("0000:18:00.0") of the NVIDIA GPUs on
// the PCI bus, sorted: the devices of /sys/bus/pci/devices whose vendor file
// is 0x10de and whose class file is a display controller (0x03xxxx: VGA or
// 3D controller; NVSwitches, 0x068000, and the GPUs' audio functions,
// 0x0403xx, are not GPUs). The kernel lists them whether or not the NVIDIA
// driver is loaded, so they tell a node whose GPU backend finds no GPU that
// GPUs are there. A device whose vendor or class file cannot be read is
// skipped; a node without /sys/bus/pci (a container) has none.
func NVIDIAGPUsOnBus(r host.Root) ([]string, error) {
	devs, err := r.Glob(pciDevicesSysPath + "/*/vendor")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range devs {
		dir := path.Dir(v)
		if vendor, err := r.ReadHex(v); err != nil || vendor != pciVendorNVIDIA {
			continue
		}
		if class, err := r.ReadHex(dir + "/class"); err != nil || class>>16 != pciClassDisplay {
			continue
		}
		out = append(out, path.Base(dir))
	}
	return out, nil
}
