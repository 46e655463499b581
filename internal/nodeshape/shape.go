// Package nodeshape describes simulated GPU nodes as data. One Shape feeds
// both the fixture-root generator (internal/fixturegen writes its sysfs/procfs
// tree) and the mock GPU backend (lib/gpu completes go-nvml's dgx mock servers
// from it), so the two always agree.
package nodeshape

// Shape is one simulated node.
type Shape struct {
	Name     string // fixture and mock name: "dgxh100"
	Hostname string
	// GPUModel is the go-nvml mock server this shape pairs with
	// ("dgxh100" for mock:dgxh100); "" when no mock matches (procfs only).
	GPUModel string

	CPUVendor string // /proc/cpuinfo vendor_id: "GenuineIntel", "AuthenticAMD", "" for Arm
	CPUModel  string // /proc/cpuinfo model name

	Sockets        int
	CoresPerSocket int
	ThreadsPerCore int
	// NUMAPerSocket splits each socket's cores into this many NUMA nodes
	// (AMD NPS4: 4). 0 means 1.
	NUMAPerSocket int
	// CPULessNUMANodes adds NUMA nodes with memory and no CPUs after the CPU
	// nodes (Grace Hopper GPU memory).
	CPULessNUMANodes int
	// MemoryMiBPerNode is MemTotal of each CPU NUMA node;
	// CPULessMemoryMiB of each CPU-less one.
	MemoryMiBPerNode int
	CPULessMemoryMiB int

	// Numbering is how logical CPU ids are given out, with S Sockets, C
	// CoresPerSocket, T ThreadsPerCore and c a core's index within its
	// socket s:
	//   - "" ("split", Linux/x86): first thread of every core of every
	//     socket, then the second threads: id = t*S*C + s*C + c. With
	//     ThreadsPerCore 1 this is simply core order.
	//   - "socket-interleaved": BIOSes listing cores round-robin across
	//     sockets: id = t*S*C + c*S + s.
	//   - "compact": a core's threads are consecutive (ThunderX2, POWER):
	//     id = s*C*T + c*T + t.
	Numbering string
	// NUMAInterleave puts core c of a socket in that socket's NUMA node
	// c % NUMAPerSocket (Intel SNC with round-robin numbering) instead of
	// c / (CoresPerSocket/NUMAPerSocket). Node ids stay
	// socket*NUMAPerSocket + k.
	NUMAInterleave bool
	// CoreIDs is the kernel's core_id of each core index c (len
	// CoresPerSocket, distinct; sparse on Intel: 0,1,2,3,4,8,9,...); nil
	// means core_id = c.
	CoreIDs []int
	// ComputeUnitCores > 1 (AMD Bulldozer, ThreadsPerCore 1): this many
	// consecutive cores, each with its own core_id, share thread_siblings
	// and core_cpus (a compute unit).
	ComputeUnitCores int
	// ClusterCores is the number of consecutive cores per cluster_cpus
	// group (0 or 1: the core itself); cluster_id numbers the groups.
	ClusterCores int
	// ListNUL ends every CPU/node list file ("online", "*_list",
	// "cpulist", "has_*", "local_cpulist"...) in "\n\x00", as some arm64
	// kernels write them.
	ListNUL bool
	// PackageIDUnknown writes physical_package_id -1 on every CPU (s390x,
	// some POWER/Arm firmware): only the package masks tell sockets apart.
	PackageIDUnknown bool
	// OldKernel is a 3.10-era kernel: no cpu/online file, and of the
	// topology files only physical_package_id, core_id, thread_siblings
	// and core_siblings (with their _list twins).
	OldKernel bool
	// OfflineCPUs are offline: cpuN/online is 0, cpuN has no topology or
	// cache directory, and they are left out of every online, sibling,
	// package, cache, NUMA and PCI locality set (possible and present still
	// list them).
	OfflineCPUs []int

	NoCPUFreq bool // no /sys/devices/system/cpu/cpufreq (VMs)
	NoCPUIdle bool // no cpuidle states
	// PCINUMAUnknown writes numa_node -1 for every PCI device (VMs).
	PCINUMAUnknown bool

	GPUs []GPU
	NICs []NIC
}

// GPU is one GPU of a shape, listed in PCI bus order (index order).
type GPU struct {
	BusID    string // "0000:18:00.0"
	Minor    int    // /dev/nvidia<Minor>
	UUID     string
	Name     string // NVML product name
	DeviceID uint16 // PCI device id (0x2330 for H100 SXM5)
	NUMANode int    // the GPU's NUMA node (before PCINUMAUnknown hides it)
	// NVSwitchLinks is the number of NVLinks into an NVSwitch fabric shared
	// by every GPU with a non-zero count; DirectLinks[j] adds point-to-point
	// links to GPU j. Both nil/0: no NVLink.
	NVSwitchLinks int
	DirectLinks   []int
	// MemoryNUMANodes are CPU-less NUMA nodes holding this GPU's memory.
	// The first holds the memory (CPULessMemoryMiB; the driver's
	// numa_status names it); the others are the empty nodes the driver
	// reserves for MIG partitions (Grace Hopper: 8 per GPU).
	MemoryNUMANodes []int
	MIG             bool // MIG mode on (current and pending)
	MIGDevices      []MIGDevice
	// PCISwitch groups devices (GPUs and NICs) behind one PCIe switch under
	// one root port: devices of a shape with the same non-zero value share
	// it. 0: the device has a root port of its own on bus 0 of its PCI
	// domain (or sits on bus 0 itself).
	PCISwitch int
}

// MIGDevice is a GPU instance with one compute instance.
type MIGDevice struct {
	Profile    string // "3g.40gb"
	GIProfile  int    // nvml.GPU_INSTANCE_PROFILE_* id
	GI, CI     int
	GICapMinor int
	CICapMinor int
}

// NIC is a network adapter: an InfiniBand/RoCE HCA or an Ethernet NIC.
type NIC struct {
	BusID    string
	NUMANode int
	IBName   string // "mlx5_0"; "" for a plain Ethernet NIC
	NetName  string // "ibp24s0", "eth0"
	Ports    []IBPort
	// PCISwitch: as GPU.PCISwitch (a NIC and the GPU it serves share one).
	PCISwitch int
}

// IBPort is one port of an HCA (/sys/class/infiniband/<dev>/ports/<n>).
type IBPort struct {
	State     string // "4: ACTIVE"
	Rate      string // "400 Gb/sec (4X NDR)"
	LinkLayer string // "InfiniBand" or "Ethernet"
}
