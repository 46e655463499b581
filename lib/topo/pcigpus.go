package topo

import (
	"errors"
	"io/fs"
	"path"

	"gpuprep/lib/host"
)

// PCI ids NVIDIAGPUsOnBus looks for.
const (
	pciVendorNVIDIA   = 0x10de
	pciClassVGA       = 0x0300 // class and subclass: VGA compatible controller
	pciClass3D        = 0x0302 // 3D controller (data-centre GPUs)
	pciDevicesSysPath = "/sys/bus/pci/devices"
	// vfioDriver is the driver of a GPU handed to a virtual machine
	// (passthrough): the host's NVIDIA driver never lists it.
	vfioDriver = "vfio-pci"
)

// NVIDIAGPUsOnBus lists the bus ids ("0000:18:00.0") of the NVIDIA GPUs on
// the PCI bus, sorted: the devices of /sys/bus/pci/devices whose vendor file
// is 0x10de and whose class file is a VGA (0x0300xx) or 3D controller
// (0x0302xx); NVSwitches (0x068000, bridges) and the GPUs' audio functions
// (0x0403xx) are not GPUs. A GPU whose driver link names vfio-pci is left
// out: it is passed through to a virtual machine, not the host's. The
// kernel lists the others whether or not the NVIDIA driver is loaded, so
// they tell a node whose GPU backend finds no GPU that GPUs are there. A
// device whose vendor or class file cannot be read is skipped; a node
// without /sys/bus/pci (a container) has none.
func NVIDIAGPUsOnBus(r host.Root) ([]string, error) {
	// The folder's names, then each one's vendor file: a glob of
	// <function>/vendor would read every function's folder too.
	fns, err := r.ReadDir(pciDevicesSysPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, fn := range fns {
		dir := pciDevicesSysPath + "/" + fn
		if vendor, err := r.ReadHex(dir + "/vendor"); err != nil || vendor != pciVendorNVIDIA {
			continue
		}
		if class, err := r.ReadHex(dir + "/class"); err != nil || class>>8 != pciClassVGA && class>>8 != pciClass3D {
			continue
		}
		if drv, err := r.LinkTarget(dir + "/driver"); err == nil && path.Base(drv) == vfioDriver {
			continue
		}
		out = append(out, fn)
	}
	return out, nil
}
