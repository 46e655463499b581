package topo

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// PCIPlace is where a PCI device sits: its sysfs path and NUMA locality.
type PCIPlace struct {
	BusID string `json:"bus_id"` // "0000:18:00.0"
	// SysPath is the device's resolved sysfs path
	// (/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0): the chain of
	// bridges above it tells which devices share a PCIe switch.
	SysPath string `json:"sys_path"`
	// NUMANode is /sys/bus/pci/devices/<bus>/numa_node; -1 when the
	// platform does not say (VMs).
	NUMANode int `json:"numa_node"`
	// LocalCPUs is /sys/bus/pci/devices/<bus>/local_cpulist.
	LocalCPUs cpuset.Set `json:"local_cpus"`
}

// readPCIPlace reads a PCI device's place from /sys/bus/pci/devices/<busID>.
// Missing numa_node or local_cpulist files are tolerated (-1, empty); garbage
// in them is an error naming the file.
func readPCIPlace(r host.Root, busID string) (PCIPlace, error) {
	link := "/sys/bus/pci/devices/" + busID
	p := PCIPlace{BusID: busID, NUMANode: -1}
	sp, err := r.Resolve(link)
	if err != nil {
		return p, err
	}
	p.SysPath = sp
	if n, err := r.ReadInt(link + "/numa_node"); err == nil {
		p.NUMANode = n
	} else if !isNotExist(err) {
		return p, err
	}
	if s, err := r.ReadString(link + "/local_cpulist"); err == nil {
		if p.LocalCPUs, err = cpuset.Parse(s); err != nil {
			return p, errorf("%s/local_cpulist: %w", link, err)
		}
	} else if !isNotExist(err) {
		return p, err
	}
	return p, nil
}

// PCIPath is how two PCI devices are connected, in nvidia-smi topo's words.
type PCIPath string

const (
	PathOneSwitch  PCIPath = "PIX"  // under one PCIe switch (at most one bridge between them)
	PathSwitch     PCIPath = "PXB"  // through several PCIe switches, below the host bridge
	PathHostBridge PCIPath = "PHB"  // share a PCIe host bridge (root complex)
	PathNUMA       PCIPath = "NODE" // different host bridges, same NUMA node
	PathSystem     PCIPath = "SYS"  // across the SMP interconnect, or unknown
)

// PathRank orders paths from nearest (0, PIX) to farthest (4, SYS), as
// NCCL and nvidia-smi topo -m do; an unknown path ranks as SYS.
func PathRank(p PCIPath) int {
	switch p {
	case PathOneSwitch:
		return 0
	case PathSwitch:
		return 1
	case PathHostBridge:
		return 2
	case PathNUMA:
		return 3
	}
	return 4
}

// PathBetween classifies how the PCI devices at a and b connect: one PCIe
// switch, several, a shared host bridge or NUMA node, else the system
// interconnect. Pure.
func PathBetween(a, b PCIPlace) PCIPath { return pciPath(a, b) }

// pciPath classifies how a and b connect from their sysfs paths and NUMA
// nodes. Pure.
func pciPath(a, b PCIPlace) PCIPath {
	ca := pciChain(a.SysPath)
	cb := pciChain(b.SysPath)
	common := 0
	for common < len(ca) && common < len(cb) && ca[common] == cb[common] {
		common++
	}
	switch {
	case common >= 3 && len(ca)-common <= 2 && len(cb)-common <= 2:
		// Root, root port and a switch's upstream port in common, and
		// each device right below one of that switch's downstream ports:
		// one switch between them.
		return PathOneSwitch
	case common >= 2 && len(ca) > 2 && len(cb) > 2:
		// Root, root port and at least one more bridge in common, with
		// more than one switch on the way.
		return PathSwitch
	case common >= 1:
		return PathHostBridge
	case a.NUMANode >= 0 && a.NUMANode == b.NUMANode:
		return PathNUMA
	}
	return PathSystem
}

// pciChain splits /sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/x into
// its PCI components [pci0000:17 0000:17:01.0 0000:18:00.0].
func pciChain(sysPath string) []string {
	var out []string
	for _, part := range strings.Split(strings.TrimPrefix(sysPath, "/sys/devices/"), "/") {
		if strings.HasPrefix(part, "pci") || looksLikeBusID(part) {
			out = append(out, part)
			continue
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

func looksLikeBusID(s string) bool {
	// dddd:bb:dd.f
	return len(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.'
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }

// parentPCI returns the nearest PCI device component of a sysfs path
// (/sys/devices/pci0000:17/.../0000:18:00.0/infiniband/mlx5_0 -> 0000:18:00.0).
func parentPCI(sysPath string) string {
	p := sysPath
	for p != "/" && p != "." {
		if looksLikeBusID(path.Base(p)) {
			return path.Base(p)
		}
		p = path.Dir(p)
	}
	return ""
}
