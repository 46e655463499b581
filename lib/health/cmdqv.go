package health

import (
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// CMDQV is what the cmdqv check reads: whether the node is an arm64 virtual
// machine, and whether the NVIDIA Tegra241 SMMU command-queue
// virtualisation (CMDQV) driver is there.
type CMDQV struct {
	ARM64, VM  bool
	Hypervisor string // what said it is a VM
	Loaded     string // what showed the driver; "" when absent
}

// hypervisorVendors are DMI sys_vendor / product_name values of VMs.
var hypervisorVendors = []string{"QEMU", "KVM", "Amazon EC2", "Microsoft Corporation", "Google", "OpenStack", "VMware", "Xen", "Firecracker", "Oracle Cloud", "Cloud Hypervisor"}

// ReadCMDQV reads: /proc/cpuinfo ("CPU implementer" lines: arm64);
// /sys/hypervisor/type, /sys/firmware/devicetree/base/hypervisor, or DMI
// /sys/class/dmi/id/{sys_vendor,product_name} naming a hypervisor (a VM);
// and the driver: /sys/module/tegra241_cmdqv, /sys/bus/platform/drivers/tegra241-cmdqv,
// or an ACPI NVDA200C device bound to a driver.
func ReadCMDQV(r host.Root) CMDQV {
	var c CMDQV
	// The first CPU's block says it; a 224-CPU cpuinfo is ~300 KB.
	if b, err := readHead(r, "/proc/cpuinfo", 4096); err == nil {
		c.ARM64 = strings.Contains(string(b), "CPU implementer")
	}
	if !c.ARM64 {
		return c
	}
	switch {
	case r.Exists("/sys/hypervisor/type"):
		c.VM, c.Hypervisor = true, "/sys/hypervisor/type"
	case r.Exists("/sys/firmware/devicetree/base/hypervisor"):
		c.VM, c.Hypervisor = true, "/sys/firmware/devicetree/base/hypervisor"
	default:
		for _, f := range []string{"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"} {
			s, _ := r.ReadString(f)
			for _, v := range hypervisorVendors {
				if s != "" && strings.Contains(strings.ToLower(s), strings.ToLower(v)) {
					c.VM, c.Hypervisor = true, f+" = "+s
				}
			}
		}
	}
	for _, p := range []string{"/sys/module/tegra241_cmdqv", "/sys/bus/platform/drivers/tegra241-cmdqv"} {
		if r.Exists(p) {
			c.Loaded = p
			return c
		}
	}
	if ds, _ := r.Glob("/sys/bus/acpi/devices/NVDA200C:*/physical_node/driver"); len(ds) > 0 {
		c.Loaded = ds[0]
	}
	return c
}

// readHead reads at most n bytes from the start of a kernel file.
func readHead(r host.Root, p string, n int) ([]byte, error) {
	full := r.Path(p)
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, n)
	got, err := unix.Read(fd, buf)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return buf[:got], nil
}
