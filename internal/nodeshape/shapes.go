package nodeshape

import "strconv"

// The simulated nodes. Each constructor returns a fresh value, so a caller
// may change what it gets without touching anyone else's copy.
//
// Numbers that matter to tests:
//   - dgxh100: device minors are not the index (2,3,0,1,6,7,4,5), so code that
//     confuses /dev/nvidia<minor> with the NVML index fails on it.
//   - dgxa100: NPS4, eight NUMA nodes smaller than the sockets; GPU 0 (minor 1)
//     is in MIG mode. MIG capability minors follow the driver's table in
//     /proc/driver/nvidia-caps/mig-minors: for GPU minor m, GPU instance g,
//     compute instance c:
//     gi access = 3 + 135*m + 9*g, ci access = 3 + 135*m + 9*g + 1 + c.
//   - cloudvm: PCI numa_node -1 everywhere, no cpufreq, no cpuidle.
//   - gh200: Arm, no SMT, CPU-less GPU-memory NUMA nodes 2..17.
//
// The CPU-topology shapes, for readers that must not assume the
// Linux/x86 split numbering or contiguous NUMA nodes:
//   - snc2xeon: 2 x 20 cores x 2 threads, socket-interleaved numbering
//     (even CPUs socket 0, odd socket 1) and SNC2 with round-robin cores:
//     node0 = 0,4,..,36,40,44,..,76; node1 = 2,6,..,38,42,..,78;
//     node2 = 1,5,..,37,41,..,77; node3 = 3,7,..,39,43,..,79. Sparse
//     core_id (0-4,8-12,16-20,24-28). One V100 on each NUMA node.
//   - bulldozer: 2 x 16 cores, compute units of 2 cores: thread_siblings
//     lists 2 CPUs (0-1, 2-3, ...) with distinct core_id; cpuinfo says
//     siblings 16, cpu cores 8. Nodes 0-3 are 8 contiguous cores each.
//   - altra: 1 x 80 cores, cluster_cpus pairs (0-1, 2-3, ...); every list
//     file ends in "\n\x00".
//   - thunderx2: 2 x 28 cores x 4 threads, compact numbering (cpu0-3 are
//     core 0 of socket 0; socket 1 is 112-223), physical_package_id -1.
//   - oldkernel: 1 x 8 cores x 2 threads (split), a 3.10 kernel (no
//     cpu/online, core_cpus, package_cpus, die_* or cluster_* files), CPUs
//     7 and 15 (core 7) offline: online CPUs 0-6,8-14.

// All returns every shape, in a fixed order.
func All() []Shape {
	return []Shape{dgxh100(), dgxa100(), cloudvm(), dgxb200(), gh200(),
		snc2xeon(), bulldozer(), altra(), thunderx2(), oldkernel()}
}

// ByName returns the shape called name.
func ByName(name string) (Shape, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// ndr is an active 400 Gb/s InfiniBand port (ConnectX-7).
func ndr() []IBPort {
	return []IBPort{{State: "4: ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}
}

// hdr is an active 200 Gb/s InfiniBand port (ConnectX-6).
func hdr() []IBPort {
	return []IBPort{{State: "4: ACTIVE", Rate: "200 Gb/sec (4X HDR)", LinkLayer: "InfiniBand"}}
}

// dgxh100: NVIDIA DGX H100. Two Sapphire Rapids sockets, SNC off (one NUMA
// node per socket), eight H100 SXM5 on an NVSwitch fabric, one ConnectX-7
// NDR HCA behind the same PCIe switch as each GPU, and a ConnectX-6 Dx
// Ethernet port (RoCE) for storage.
func dgxh100() Shape {
	const (
		name  = "NVIDIA H100 80GB HBM3"
		devID = 0x2330
	)
	gpu := func(bus string, minor int, uuid string, numa, sw int) GPU {
		return GPU{BusID: bus, Minor: minor, UUID: uuid, Name: name, DeviceID: devID,
			NUMANode: numa, NVSwitchLinks: 18, PCISwitch: sw}
	}
	hca := func(n int, bus, net string, numa int) NIC {
		return NIC{BusID: bus, NUMANode: numa, IBName: "mlx5_" + strconv.Itoa(n), NetName: net,
			Ports: ndr(), PCISwitch: n + 1}
	}
	return Shape{
		Name:             "dgxh100",
		Hostname:         "dgxh100-01",
		GPUModel:         "dgxh100",
		CPUVendor:        "GenuineIntel",
		CPUModel:         "Intel(R) Xeon(R) Platinum 8480C",
		Sockets:          2,
		CoresPerSocket:   56,
		ThreadsPerCore:   2,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 1031680,
		GPUs: []GPU{
			gpu("0000:18:00.0", 2, "GPU-1e0d1697-fb12-2a4f-76c6-69699b1022c5", 0, 1),
			gpu("0000:2a:00.0", 3, "GPU-915b41c0-5060-2ce9-7004-4fc3f3b05407", 0, 2),
			gpu("0000:3a:00.0", 0, "GPU-734529b3-d6d6-bbd7-a166-ec9c856e660d", 0, 3),
			gpu("0000:5d:00.0", 1, "GPU-44f63845-6b46-5863-a589-763baab51237", 0, 4),
			gpu("0000:9a:00.0", 6, "GPU-28a04730-1836-d1e7-98ea-7ab21798a1c3", 1, 5),
			gpu("0000:ab:00.0", 7, "GPU-e3e586cf-78d2-6e85-b7e2-887cdc158ff3", 1, 6),
			gpu("0000:ba:00.0", 4, "GPU-61410bce-d9a8-4fed-236f-c1dcf3174a36", 1, 7),
			gpu("0000:db:00.0", 5, "GPU-4a27e4fa-c612-974a-a46b-bb511546cb2c", 1, 8),
		},
		NICs: []NIC{
			hca(0, "0000:19:00.0", "ibp25s0", 0),
			hca(1, "0000:2b:00.0", "ibp43s0", 0),
			hca(2, "0000:3b:00.0", "ibp59s0", 0),
			hca(3, "0000:5e:00.0", "ibp94s0", 0),
			hca(4, "0000:9b:00.0", "ibp155s0", 1),
			hca(5, "0000:ac:00.0", "ibp172s0", 1),
			hca(6, "0000:bb:00.0", "ibp187s0", 1),
			hca(7, "0000:dc:00.0", "ibp220s0", 1),
			{BusID: "0000:0c:00.0", NUMANode: 0, IBName: "mlx5_8", NetName: "enp12s0f0np0",
				Ports: []IBPort{{State: "4: ACTIVE", Rate: "100 Gb/sec (4X EDR)", LinkLayer: "Ethernet"}}},
		},
	}
}

// dgxa100: NVIDIA DGX A100. Two EPYC 7742 in NPS4 (four NUMA nodes per
// socket), eight A100 SXM4 40GB, two GPUs and two ConnectX-6 HDR HCAs behind
// each pair of PCIe switches. GPU 0 is in MIG mode with a 3g.20gb and a
// 2g.10gb instance.
func dgxa100() Shape {
	const (
		name  = "NVIDIA A100-SXM4-40GB"
		devID = 0x20b0
	)
	gpu := func(bus string, minor int, uuid string, numa, sw int) GPU {
		return GPU{BusID: bus, Minor: minor, UUID: uuid, Name: name, DeviceID: devID,
			NUMANode: numa, NVSwitchLinks: 12, PCISwitch: sw}
	}
	hca := func(n int, bus, net string, numa, sw int) NIC {
		return NIC{BusID: bus, NUMANode: numa, IBName: "mlx5_" + strconv.Itoa(n), NetName: net,
			Ports: hdr(), PCISwitch: sw}
	}
	gpus := []GPU{
		gpu("0000:07:00.0", 1, "GPU-2d1bda90-010f-bfb2-ef72-a387586fb490", 3, 1),
		gpu("0000:0f:00.0", 0, "GPU-c4b274ff-e98b-9717-5159-4274a76eb504", 3, 1),
		gpu("0000:47:00.0", 3, "GPU-990b4da2-a09b-a231-eda3-342aab4a1755", 1, 2),
		gpu("0000:4e:00.0", 2, "GPU-2f3f39a1-5632-3005-2668-3bf2be184b21", 1, 2),
		gpu("0000:87:00.0", 5, "GPU-edb29a14-dd2d-5d9d-db95-1e641efbf646", 7, 3),
		gpu("0000:90:00.0", 4, "GPU-662897b2-9996-8b1a-76c3-0b5c74f7d338", 7, 3),
		gpu("0000:b7:00.0", 7, "GPU-7cb78fa2-700b-d912-6558-2413578b524f", 5, 4),
		gpu("0000:bd:00.0", 6, "GPU-a6be1f19-3018-585d-2c30-efd1795c4331", 5, 4),
	}
	// GPU 0 has device minor 1: its capabilities are gpu1/gi<G>/... in
	// mig-minors.
	gpus[0].MIG = true
	gpus[0].MIGDevices = []MIGDevice{
		// nvml.GPU_INSTANCE_PROFILE_3_SLICE = 2; placement start 0.
		{Profile: "3g.20gb", GIProfile: 2, GI: 1, CI: 0, GICapMinor: 147, CICapMinor: 148},
		// nvml.GPU_INSTANCE_PROFILE_2_SLICE = 1; placement start 4.
		{Profile: "2g.10gb", GIProfile: 1, GI: 5, CI: 0, GICapMinor: 183, CICapMinor: 184},
	}
	return Shape{
		Name:             "dgxa100",
		Hostname:         "dgxa100-01",
		GPUModel:         "dgxa100",
		CPUVendor:        "AuthenticAMD",
		CPUModel:         "AMD EPYC 7742 64-Core Processor",
		Sockets:          2,
		CoresPerSocket:   64,
		ThreadsPerCore:   2,
		NUMAPerSocket:    4,
		MemoryMiBPerNode: 128512,
		GPUs:             gpus,
		NICs: []NIC{
			hca(0, "0000:0c:00.0", "ibp12s0", 3, 1),
			hca(1, "0000:12:00.0", "ibp18s0", 3, 1),
			hca(2, "0000:4b:00.0", "ibp75s0", 1, 2),
			hca(3, "0000:54:00.0", "ibp84s0", 1, 2),
			hca(4, "0000:8d:00.0", "ibp141s0", 7, 3),
			hca(5, "0000:94:00.0", "ibp148s0", 7, 3),
			hca(6, "0000:ba:00.0", "ibp186s0", 5, 4),
			hca(7, "0000:cc:00.0", "ibp204s0", 5, 4),
		},
	}
}

// cloudvm: a cloud VM with eight H200 passed through. The hypervisor shows
// one socket and one NUMA node, hides the PCI locality (numa_node -1,
// local_cpus all CPUs), and exposes neither cpufreq nor cpuidle. Each GPU
// sits behind its own virtual root port; the NIC is virtio.
func cloudvm() Shape {
	const (
		name  = "NVIDIA H200 141GB HBM3e" // go-nvml mock gpus.H200_SXM5_141GB
		devID = 0x2333
	)
	gpu := func(bus string, minor int, uuid string) GPU {
		return GPU{BusID: bus, Minor: minor, UUID: uuid, Name: name, DeviceID: devID,
			NUMANode: 0, NVSwitchLinks: 18}
	}
	return Shape{
		Name:             "cloudvm",
		Hostname:         "gpu-vm-01",
		GPUModel:         "dgxh200",
		CPUVendor:        "GenuineIntel",
		CPUModel:         "Intel(R) Xeon(R) Platinum 8480+",
		Sockets:          1,
		CoresPerSocket:   48,
		ThreadsPerCore:   2,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 1966080,
		NoCPUFreq:        true,
		NoCPUIdle:        true,
		PCINUMAUnknown:   true,
		GPUs: []GPU{
			gpu("0000:0a:00.0", 0, "GPU-fc968545-2299-d4b6-8f9c-bb0a974eef22"),
			gpu("0000:0b:00.0", 1, "GPU-17622820-0c71-5dbf-0670-4b6d907cae40"),
			gpu("0000:0c:00.0", 2, "GPU-1f57fa40-124e-4eba-a0fa-ab79514c7f9f"),
			gpu("0000:0d:00.0", 3, "GPU-1b83c709-e2a2-c855-b7d6-f55e4b3e00d9"),
			gpu("0000:0e:00.0", 4, "GPU-e43db019-7827-1577-a2d0-87808df7c157"),
			gpu("0000:0f:00.0", 5, "GPU-a458e131-628a-0d09-8422-f36ce1c12cee"),
			gpu("0000:10:00.0", 6, "GPU-2b6b26f1-3ab9-47c7-5aef-0d454760b79f"),
			gpu("0000:11:00.0", 7, "GPU-b2aef6a0-3671-9751-1f64-cf5e60e9c544"),
		},
		NICs: []NIC{
			{BusID: "0000:00:03.0", NUMANode: 0, NetName: "eth0"},
		},
	}
}

// dgxb200: NVIDIA DGX B200. Two Emerald Rapids sockets, eight B200 on an
// NVSwitch fabric, a ConnectX-7 NDR HCA behind each GPU's PCIe switch.
func dgxb200() Shape {
	const (
		name  = "NVIDIA B200 180GB HBM3e" // go-nvml mock gpus.B200_SXM5_180GB
		devID = 0x2b00
	)
	gpu := func(bus string, minor int, uuid string, numa, sw int) GPU {
		return GPU{BusID: bus, Minor: minor, UUID: uuid, Name: name, DeviceID: devID,
			NUMANode: numa, NVSwitchLinks: 18, PCISwitch: sw}
	}
	hca := func(n int, bus, net string, numa int) NIC {
		return NIC{BusID: bus, NUMANode: numa, IBName: "mlx5_" + strconv.Itoa(n), NetName: net,
			Ports: ndr(), PCISwitch: n + 1}
	}
	return Shape{
		Name:             "dgxb200",
		Hostname:         "dgxb200-01",
		GPUModel:         "dgxb200",
		CPUVendor:        "GenuineIntel",
		CPUModel:         "INTEL(R) XEON(R) PLATINUM 8570",
		Sockets:          2,
		CoresPerSocket:   56,
		ThreadsPerCore:   2,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 2063360,
		GPUs: []GPU{
			gpu("0000:1b:00.0", 0, "GPU-2a1bc9ae-1472-48a1-0cfa-18bf4924a69b", 0, 1),
			gpu("0000:43:00.0", 1, "GPU-5eed00c3-cb98-7a5d-bce5-6612601f5cb3", 0, 2),
			gpu("0000:52:00.0", 2, "GPU-3e5413d7-bcd3-d96e-42fe-0a4425150a42", 0, 3),
			gpu("0000:61:00.0", 3, "GPU-d0a1ef44-2981-373b-c20e-07257a3a2246", 0, 4),
			gpu("0000:9d:00.0", 4, "GPU-20f09be7-307c-a25f-da72-b5b1d324bdfc", 1, 5),
			gpu("0000:c3:00.0", 5, "GPU-f5cd377e-f28c-484e-9975-f9dcfed2699d", 1, 6),
			gpu("0000:d1:00.0", 6, "GPU-fe33e613-d8fe-42ef-eba8-fa5852dafc87", 1, 7),
			gpu("0000:df:00.0", 7, "GPU-58138ea8-4da1-e848-5df3-bce8c6519b29", 1, 8),
		},
		NICs: []NIC{
			hca(0, "0000:18:00.0", "ibp24s0", 0),
			hca(1, "0000:40:00.0", "ibp64s0", 0),
			hca(2, "0000:4f:00.0", "ibp79s0", 0),
			hca(3, "0000:5e:00.0", "ibp94s0", 0),
			hca(4, "0000:9a:00.0", "ibp154s0", 1),
			hca(5, "0000:c0:00.0", "ibp192s0", 1),
			hca(6, "0000:ce:00.0", "ibp206s0", 1),
			hca(7, "0000:dc:00.0", "ibp220s0", 1),
		},
	}
}

// gh200: two Grace Hopper superchips (GH200 NVL2-like). 72 Neoverse V2 cores
// per Grace, no SMT, one CPU NUMA node per Grace; each Hopper's HBM is a
// CPU-less NUMA node (2 and 10), followed by seven empty nodes the driver
// keeps for MIG (3-9, 11-17). No NVLink between the GPUs. One ConnectX-7 per
// Grace, each GPU and HCA in a PCI domain of its own.
func gh200() Shape {
	const name = "NVIDIA GH200 480GB"
	return Shape{
		Name:             "gh200",
		Hostname:         "gh200-01",
		GPUModel:         "",
		CPUVendor:        "",
		CPUModel:         "Neoverse-V2",
		Sockets:          2,
		CoresPerSocket:   72,
		ThreadsPerCore:   1,
		NUMAPerSocket:    1,
		CPULessNUMANodes: 16,
		MemoryMiBPerNode: 491520,
		CPULessMemoryMiB: 97280,
		GPUs: []GPU{
			{BusID: "0009:01:00.0", Minor: 0, UUID: "GPU-15fc4022-ac77-5d96-0ab2-ffebb07edaef",
				Name: name, DeviceID: 0x2342, NUMANode: 0,
				MemoryNUMANodes: []int{2, 3, 4, 5, 6, 7, 8, 9}},
			{BusID: "0019:01:00.0", Minor: 1, UUID: "GPU-3f68a714-fe06-8e6a-a713-7cadfa22146b",
				Name: name, DeviceID: 0x2342, NUMANode: 1,
				MemoryNUMANodes: []int{10, 11, 12, 13, 14, 15, 16, 17}},
		},
		NICs: []NIC{
			{BusID: "0002:01:00.0", NUMANode: 0, IBName: "mlx5_0", NetName: "ibP2p1s0", Ports: ndr()},
			{BusID: "0012:01:00.0", NUMANode: 1, IBName: "mlx5_1", NetName: "ibP18p1s0", Ports: ndr()},
		},
	}
}

// edr is an active 100 Gb/s InfiniBand port (ConnectX-5).
func edr() []IBPort {
	return []IBPort{{State: "4: ACTIVE", Rate: "100 Gb/sec (4X EDR)", LinkLayer: "InfiniBand"}}
}

// snc2xeon: two Xeon Gold 6230 (Cascade Lake) in SNC2 mode, whose BIOS
// numbers cores round-robin across sockets and sub-NUMA clusters: a socket's
// even cores form its first NUMA node, its odd cores the second. Four V100
// PCIe, one per NUMA node (each behind a root port and switch of its own),
// a ConnectX-5 EDR HCA on node 0.
func snc2xeon() Shape {
	const (
		name  = "Tesla V100-PCIE-32GB"
		devID = 0x1db6
	)
	gpu := func(bus string, minor int, uuid string, numa int) GPU {
		return GPU{BusID: bus, Minor: minor, UUID: uuid, Name: name, DeviceID: devID,
			NUMANode: numa, PCISwitch: minor + 1}
	}
	return Shape{
		Name:             "snc2xeon",
		Hostname:         "snc2xeon-01",
		GPUModel:         "",
		CPUVendor:        "GenuineIntel",
		CPUModel:         "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz",
		Sockets:          2,
		CoresPerSocket:   20,
		ThreadsPerCore:   2,
		NUMAPerSocket:    2,
		MemoryMiBPerNode: 96 * 1024,
		Numbering:        "socket-interleaved",
		NUMAInterleave:   true,
		CoreIDs:          []int{0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20, 24, 25, 26, 27, 28},
		GPUs: []GPU{
			gpu("0000:18:00.0", 0, "GPU-c8ea338e-9a42-4af3-880d-a728de631155", 0),
			gpu("0000:3b:00.0", 1, "GPU-96199cc7-258d-49e3-a9aa-cbef7b691fbb", 1),
			gpu("0000:86:00.0", 2, "GPU-03d49490-e955-4342-8921-cd6c691461a9", 2),
			gpu("0000:af:00.0", 3, "GPU-7b81c2e1-2984-448e-8356-ba89a2b8d672", 3),
		},
		NICs: []NIC{
			{BusID: "0000:5e:00.0", NUMANode: 0, IBName: "mlx5_0", NetName: "ibp94s0", Ports: edr(), PCISwitch: 5},
		},
	}
}

// bulldozer: two Opteron 6380 (Piledriver). Each package holds two 8-core
// dies (a NUMA node and an L3 each); two cores form a compute unit sharing
// its L1i and L2, so thread_siblings pairs cores with distinct core_id. Two
// P100 PCIe, on nodes 0 and 2.
func bulldozer() Shape {
	const (
		name  = "Tesla P100-PCIE-16GB"
		devID = 0x15f8
	)
	return Shape{
		Name:             "bulldozer",
		Hostname:         "opteron-01",
		GPUModel:         "",
		CPUVendor:        "AuthenticAMD",
		CPUModel:         "AMD Opteron(tm) Processor 6380",
		Sockets:          2,
		CoresPerSocket:   16,
		ThreadsPerCore:   1,
		NUMAPerSocket:    2,
		MemoryMiBPerNode: 64 * 1024,
		ComputeUnitCores: 2,
		GPUs: []GPU{
			{BusID: "0000:03:00.0", Minor: 0, UUID: "GPU-ee446987-7876-42aa-8526-719d4c25696b",
				Name: name, DeviceID: devID, NUMANode: 0, PCISwitch: 1},
			{BusID: "0000:43:00.0", Minor: 1, UUID: "GPU-d6e083ef-5355-4b7c-9157-8066d4cd8a36",
				Name: name, DeviceID: devID, NUMANode: 2, PCISwitch: 2},
		},
	}
}

// altra: one Ampere Altra Q80-30, 80 Neoverse N1 cores in clusters of two,
// on a kernel that ends every CPU list file in a NUL. Two A100 80GB PCIe,
// each in a PCI domain of its own.
func altra() Shape {
	const (
		name  = "NVIDIA A100 80GB PCIe"
		devID = 0x20b5
	)
	return Shape{
		Name:             "altra",
		Hostname:         "altra-01",
		GPUModel:         "",
		CPUVendor:        "",
		CPUModel:         "Neoverse-N1",
		Sockets:          1,
		CoresPerSocket:   80,
		ThreadsPerCore:   1,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 512 * 1024,
		ClusterCores:     2,
		ListNUL:          true,
		GPUs: []GPU{
			{BusID: "0004:01:00.0", Minor: 0, UUID: "GPU-69b30c11-7197-41ef-9db6-dd614410c80c",
				Name: name, DeviceID: devID, NUMANode: 0},
			{BusID: "000c:01:00.0", Minor: 1, UUID: "GPU-ab1f2489-70cf-4169-bbfc-f723a75a8cda",
				Name: name, DeviceID: devID, NUMANode: 0},
		},
	}
}

// thunderx2: two Cavium ThunderX2 CN9975, 28 cores of 4 threads each,
// numbered compactly (a core's threads are consecutive), with firmware that
// leaves physical_package_id at -1. One NUMA node per socket, one V100 PCIe
// on each.
func thunderx2() Shape {
	const (
		name  = "Tesla V100-PCIE-32GB"
		devID = 0x1db6
	)
	return Shape{
		Name:             "thunderx2",
		Hostname:         "tx2-01",
		GPUModel:         "",
		CPUVendor:        "",
		CPUModel:         "Cavium ThunderX2 CN9975",
		Sockets:          2,
		CoresPerSocket:   28,
		ThreadsPerCore:   4,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 256 * 1024,
		Numbering:        "compact",
		PackageIDUnknown: true,
		GPUs: []GPU{
			{BusID: "0000:01:00.0", Minor: 0, UUID: "GPU-4d645f9b-5bfb-44e9-88d8-9c4e5ed57a66",
				Name: name, DeviceID: devID, NUMANode: 0},
			{BusID: "0002:01:00.0", Minor: 1, UUID: "GPU-e05f91c9-5e2d-4db9-86d2-26b16eb076d9",
				Name: name, DeviceID: devID, NUMANode: 1},
		},
	}
}

// oldkernel: one Xeon E5-2620 v4 (Broadwell) on a CentOS 7 (3.10) kernel,
// which has neither cpu/online nor the newer topology files, with both
// threads of core 7 taken offline. Two Tesla P40.
func oldkernel() Shape {
	const (
		name  = "Tesla P40"
		devID = 0x1b38
	)
	return Shape{
		Name:             "oldkernel",
		Hostname:         "centos7-gpu-01",
		GPUModel:         "",
		CPUVendor:        "GenuineIntel",
		CPUModel:         "Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz",
		Sockets:          1,
		CoresPerSocket:   8,
		ThreadsPerCore:   2,
		NUMAPerSocket:    1,
		MemoryMiBPerNode: 128 * 1024,
		OldKernel:        true,
		OfflineCPUs:      []int{7, 15},
		GPUs: []GPU{
			{BusID: "0000:02:00.0", Minor: 0, UUID: "GPU-c9a1681a-7176-4d50-ad79-7ab3972f15c2",
				Name: name, DeviceID: devID, NUMANode: 0},
			{BusID: "0000:03:00.0", Minor: 1, UUID: "GPU-7d6a3013-a52c-4c2a-bd34-83bcfc915a5b",
				Name: name, DeviceID: devID, NUMANode: 0},
		},
	}
}
