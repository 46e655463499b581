package fixturegen

import (
	"fmt"
	"strings"
)

// dmi is a node's SMBIOS identity.
type dmi struct {
	SysVendor, ProductName, BoardVendor, BoardName, BIOSVendor, BIOSVersion, ChassisType string
}

func (l *layout) dmi() dmi {
	switch l.s.Name {
	case "dgxh100":
		return dmi{"NVIDIA", "DGXH100", "NVIDIA", "DGXH100", "American Megatrends International, LLC.", "1.5.0", "23"}
	case "dgxa100":
		return dmi{"NVIDIA", "DGXA100 920-23687-2530-000", "NVIDIA", "DGXA100", "American Megatrends Inc.", "1.25", "23"}
	case "dgxb200":
		return dmi{"NVIDIA", "DGXB200", "NVIDIA", "DGXB200", "American Megatrends International, LLC.", "1.2.0", "23"}
	case "gh200":
		return dmi{"Supermicro", "ARS-221GL-NHIR", "Supermicro", "G1SMH-G", "American Megatrends International, LLC.", "2.0", "17"}
	case "snc2xeon":
		return dmi{"Dell Inc.", "PowerEdge R740", "Dell Inc.", "06WXJT", "Dell Inc.", "2.19.1", "23"}
	case "bulldozer":
		return dmi{"Supermicro", "AS -1022G-NTF", "Supermicro", "H8DGU", "American Megatrends Inc.", "3.5", "17"}
	case "altra":
		return dmi{"GIGABYTE", "G242-P33-00", "GIGABYTE", "MP32-AR1-00", "GIGABYTE", "F31", "17"}
	case "thunderx2":
		return dmi{"HPE", "Apollo 70", "HPE", "Comanche", "HPE", "L50_5.13_1.16", "17"}
	case "oldkernel":
		return dmi{"Supermicro", "SYS-1028GR-TR", "Supermicro", "X10DRG-HT", "American Megatrends Inc.", "3.1", "17"}
	}
	if l.s.PCINUMAUnknown {
		return dmi{"QEMU", "Standard PC (Q35 + ICH9, 2009)", "", "", "SeaBIOS", "1.16.3-debian-1.16.3-2", "1"}
	}
	return dmi{"Generic", l.s.Name, "Generic", l.s.Name, "Generic", "1.0", "23"}
}

// writeSystem writes DMI, kernel identity and the kernel knobs a tuning
// profile touches, at their usual distribution defaults.
func writeSystem(t *tree, l *layout) {
	d := l.dmi()
	id := "sys/devices/virtual/dmi/id"
	t.link("sys/class/dmi/id", id)
	t.line(id+"/sys_vendor", d.SysVendor)
	t.line(id+"/product_name", d.ProductName)
	t.line(id+"/board_vendor", d.BoardVendor)
	t.line(id+"/board_name", d.BoardName)
	t.line(id+"/bios_vendor", d.BIOSVendor)
	t.line(id+"/bios_version", d.BIOSVersion)
	t.line(id+"/chassis_type", d.ChassisType)
	t.line(id+"/chassis_vendor", d.SysVendor)

	t.line("proc/sys/kernel/hostname", l.s.Hostname)
	t.line("proc/sys/kernel/ostype", "Linux")
	t.line("proc/sys/kernel/osrelease", l.osRelease())
	cmdline := "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=0b3e4c4e-7f34-4e4e-9b4e-3f0e6e1f2a10 ro quiet"
	if l.s.OldKernel { // a CentOS 7 kernel
		cmdline = "BOOT_IMAGE=/vmlinuz-3.10.0-1160.119.1.el7.x86_64 root=UUID=0b3e4c4e-7f34-4e4e-9b4e-3f0e6e1f2a10 ro crashkernel=auto rhgb quiet"
	}
	if l.isArm() {
		cmdline = strings.Replace(cmdline, "amd64", "arm64", 1) + " init_on_alloc=0"
	} else if !l.s.PCINUMAUnknown {
		cmdline += " intel_iommu=on iommu=pt"
	}
	t.line("proc/cmdline", cmdline)
	// What hwloc-gather-topology records of uname for a captured root:
	// under HWLOC_FSROOT hwloc learns the architecture only from this file,
	// and applies its x86 quirks (AMD compute units) only with it.
	t.file("proc/hwloc-nofile-info", fmt.Sprintf("OSName: Linux\nOSRelease: %s\nHostName: %s\nArchitecture: %s\n",
		l.osRelease(), l.s.Hostname, map[bool]string{true: "aarch64", false: "x86_64"}[l.isArm()]))

	thp := "sys/kernel/mm/transparent_hugepage"
	if l.s.PCINUMAUnknown {
		t.line(thp+"/enabled", "[always] madvise never")
	} else {
		t.line(thp+"/enabled", "always [madvise] never")
	}
	t.line(thp+"/defrag", "always defer defer+madvise [madvise] never")
	t.line(thp+"/use_zero_page", "1")
	t.line(thp+"/hpage_pmd_size", "2097152")
	t.line(thp+"/shmem_enabled", "always within_size advise [never] deny force")
	t.line(thp+"/khugepaged/defrag", "1")

	vm := "proc/sys/vm"
	t.line(vm+"/swappiness", "60")
	t.line(vm+"/dirty_ratio", "20")
	t.line(vm+"/dirty_background_ratio", "10")
	t.line(vm+"/dirty_bytes", "0")
	t.line(vm+"/dirty_background_bytes", "0")
	t.line(vm+"/zone_reclaim_mode", "0")
	t.line(vm+"/nr_hugepages", "0")
	t.line(vm+"/overcommit_memory", "0")
	t.line(vm+"/min_free_kbytes", "90112")
	// The kernel turns automatic NUMA balancing on only with several nodes.
	if len(l.Nodes) > 1 {
		t.line("proc/sys/kernel/numa_balancing", "1")
	} else {
		t.line("proc/sys/kernel/numa_balancing", "0")
	}

	cg := "sys/fs/cgroup"
	t.line(cg+"/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc")
	t.line(cg+"/cgroup.subtree_control", "cpuset cpu io memory pids")
	t.line(cg+"/cpuset.cpus.effective", cpuList(l.onlineCPUs()))
	var mems []int
	for _, n := range l.Nodes {
		if n.MemMiB > 0 {
			mems = append(mems, n.ID)
		}
	}
	t.line(cg+"/cpuset.mems.effective", cpuList(mems))
}

// osRelease is the kernel release of the shape: Debian 12's, or CentOS 7's
// for an OldKernel shape.
func (l *layout) osRelease() string {
	switch {
	case l.s.OldKernel:
		return "3.10.0-1160.119.1.el7.x86_64"
	case l.isArm():
		return "6.1.0-28-arm64"
	}
	return "6.1.0-28-amd64"
}
