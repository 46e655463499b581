package fixturegen

import (
	"fmt"
	"strings"
)

// The driver's MIG capability table (/proc/driver/nvidia-caps/mig-minors)
// lists, for GPU minors 0..31, GPU instances 0..14 each with compute
// instances 0..7, minors counting up from 3 after "config 1" and "monitor 2".
const (
	migGPUs        = 32
	migGIsPerGPU   = 15
	migCIsPerGI    = 8
	migFirstMinor  = 3
	migMinorsPerGI = 1 + migCIsPerGI
)

// giCapMinor is the nvidia-caps minor of gpu<gpuMinor>/gi<gi>/access.
func giCapMinor(gpuMinor, gi int) int {
	return migFirstMinor + gpuMinor*migGIsPerGPU*migMinorsPerGI + gi*migMinorsPerGI
}

// ciCapMinor is the nvidia-caps minor of gpu<gpuMinor>/gi<gi>/ci<ci>/access.
func ciCapMinor(gpuMinor, gi, ci int) int {
	return giCapMinor(gpuMinor, gi) + 1 + ci
}

// driverVersion is the NVIDIA driver the shape runs (the go-nvml mock's).
func (l *layout) driverVersion() string {
	if l.s.GPUModel == "dgxb200" {
		return "560.28.03"
	}
	return "550.54.15"
}

type gpuFacts struct {
	VBIOS    string
	DMABits  int
	Firmware bool // GSP firmware in use
}

func gpuFactsFor(devID uint16) gpuFacts {
	switch devID {
	case 0x20b0: // A100: proprietary driver, no GSP
		return gpuFacts{VBIOS: "92.00.45.00.06", DMABits: 47}
	case 0x20b5: // A100 80GB PCIe
		return gpuFacts{VBIOS: "92.00.68.00.01", DMABits: 47}
	case 0x1db6: // V100 PCIe 32GB
		return gpuFacts{VBIOS: "88.00.80.00.01", DMABits: 47}
	case 0x15f8: // P100 PCIe 16GB
		return gpuFacts{VBIOS: "86.00.4d.00.01", DMABits: 47}
	case 0x1b38: // P40
		return gpuFacts{VBIOS: "86.02.23.00.01", DMABits: 47}
	case 0x2333:
		return gpuFacts{VBIOS: "96.00.a5.00.1a", DMABits: 52, Firmware: true}
	case 0x2b00:
		return gpuFacts{VBIOS: "97.00.52.00.01", DMABits: 52, Firmware: true}
	case 0x2342:
		return gpuFacts{VBIOS: "96.00.6a.00.01", DMABits: 52, Firmware: true}
	default:
		return gpuFacts{VBIOS: "96.00.74.00.01", DMABits: 52, Firmware: true}
	}
}

// writeNVIDIA writes the driver's procfs files and /sys/module/nvidia.
func writeNVIDIA(t *tree, l *layout) {
	if len(l.s.GPUs) == 0 {
		return
	}
	ver := l.driverVersion()
	arch := "x86_64"
	if l.isArm() {
		arch = "aarch64"
	}
	open := true // open kernel modules; GPUs before Turing's GSP era run the proprietary ones
	for _, g := range l.s.GPUs {
		if !gpuFactsFor(g.DeviceID).Firmware {
			open = false
		}
	}
	if open {
		t.linef("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for %s  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) ", arch, ver)
	} else {
		t.linef("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX %s Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) ", arch, ver)
	}
	t.file("proc/driver/nvidia/params", nvidiaParams)
	t.file("proc/driver/nvidia/warnings/README", "The NVIDIA graphics driver tries to detect potential problems\nwith the host system and warns about them using the system's\nlogging mechanisms. Important warning message are also logged\nto dedicated text files in this directory.\n")
	t.file("proc/driver/nvidia/patches/README", "The NVIDIA graphics driver's kernel interface files can be\npatched to improve compatibility with new Linux kernels or to\nfix bugs in these files. When applied, each official patch\nprovides a short text file with a short description of itself\nin this directory.\n")
	t.line("sys/module/nvidia/version", ver)
	t.line("sys/module/nvidia/initstate", "live")
	for _, g := range l.s.GPUs {
		f := gpuFactsFor(g.DeviceID)
		fw := "N/A"
		if f.Firmware {
			fw = ver
		}
		dir := "proc/driver/nvidia/gpus/" + strings.ToLower(g.BusID)
		var b strings.Builder
		fmt.Fprintf(&b, "Model: \t\t %s\n", g.Name)
		fmt.Fprintf(&b, "IRQ:   \t\t %d\n", 0)
		fmt.Fprintf(&b, "GPU UUID: \t %s\n", g.UUID)
		fmt.Fprintf(&b, "Video BIOS: \t %s\n", f.VBIOS)
		fmt.Fprintf(&b, "Bus Type: \t %s\n", "PCIe")
		fmt.Fprintf(&b, "DMA Size: \t %d bits\n", f.DMABits)
		fmt.Fprintf(&b, "DMA Mask: \t 0x%x\n", uint64(1)<<f.DMABits-1)
		fmt.Fprintf(&b, "Bus Location: \t %s\n", strings.ToLower(g.BusID))
		fmt.Fprintf(&b, "Device Minor: \t %d\n", g.Minor)
		fmt.Fprintf(&b, "GPU Firmware: \t %s\n", fw)
		fmt.Fprintf(&b, "GPU Excluded:\t %s\n", "No")
		t.file(dir+"/information", b.String())
		t.file(dir+"/power", gpuPower)
		if len(g.MemoryNUMANodes) > 0 {
			node := g.MemoryNUMANodes[0]
			t.file(dir+"/numa_status", fmt.Sprintf("Node: %d\nStatus: online\nAddress: 0x%x\nSize: 0x%x\n",
				node, 0x400000000000+uint64(node)<<40, uint64(l.Nodes[node].MemMiB)<<20))
		}
	}
	writeNVCaps(t, l)
}

// writeNVCaps writes the nvidia-caps minor tables and the capability files
// of existing MIG instances.
func writeNVCaps(t *tree, l *layout) {
	var b strings.Builder
	b.WriteString("config 1\nmonitor 2\n")
	for g := 0; g < migGPUs; g++ {
		for gi := 0; gi < migGIsPerGPU; gi++ {
			fmt.Fprintf(&b, "gpu%d/gi%d/access %d\n", g, gi, giCapMinor(g, gi))
			for ci := 0; ci < migCIsPerGI; ci++ {
				fmt.Fprintf(&b, "gpu%d/gi%d/ci%d/access %d\n", g, gi, ci, ciCapMinor(g, gi, ci))
			}
		}
	}
	t.file("proc/driver/nvidia-caps/mig-minors", b.String())
	imex := ciCapMinor(migGPUs-1, migGIsPerGPU-1, migCIsPerGI-1) + 1
	t.line("proc/driver/nvidia-caps/nvlink-minors", "fabric-mgmt 0")
	t.linef("proc/driver/nvidia-caps/sys-minors", "fabric-imex-mgmt %d", imex)
	caps := "proc/driver/nvidia/capabilities"
	t.file(caps+"/mig/config", capFile(1, 256))
	t.file(caps+"/mig/monitor", capFile(2, 292))
	t.file(caps+"/fabric-imex-mgmt", capFile(imex, 256))
	for _, g := range l.s.GPUs {
		gdir := fmt.Sprintf("%s/gpu%d/mig", caps, g.Minor)
		t.mkdir(gdir)
		for _, m := range g.MIGDevices {
			t.file(fmt.Sprintf("%s/gi%d/access", gdir, m.GI), capFile(m.GICapMinor, 292))
			t.file(fmt.Sprintf("%s/gi%d/ci%d/access", gdir, m.GI, m.CI), capFile(m.CICapMinor, 292))
		}
	}
}

func capFile(minor, mode int) string {
	return fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: %d\nDeviceFileModify: 1\n", minor, mode)
}

const gpuPower = `Runtime D3 status:          Disabled by default
Video Memory:               Active

GPU Hardware Support:
 Video Memory Self Refresh: Not Supported
 Video Memory Off:          Not Supported

S0ix Power Management:
 Platform Support:          Not Supported
 Status:                    Disabled

Notebook Dynamic Boost:     Not Supported
`

const nvidiaParams = `ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 0
DeviceFileMode: 438
InitializeSystemMemoryAllocations: 1
UsePageAttributeTable: 4294967295
EnableMSI: 1
EnablePCIeGen3: 0
MemoryPoolSize: 0
KMallocHeapMaxSize: 0
VMallocHeapMaxSize: 0
IgnoreMMIOCheck: 0
EnableStreamMemOPs: 0
EnableUserNUMAManagement: 1
NvLinkDisable: 0
RmProfilingAdminOnly: 1
PreserveVideoMemoryAllocations: 0
EnableS0ixPowerManagement: 0
S0ixPowerManagementVideoMemoryThreshold: 256
DynamicPowerManagement: 3
DynamicPowerManagementVideoMemoryThreshold: 200
RegisterPCIDriver: 1
EnablePCIERelaxedOrderingMode: 0
EnableResizableBar: 0
EnableGpuFirmware: 18
EnableGpuFirmwareLogs: 2
RmNvlinkBandwidthLinkCount: 0
EnableDbgBreakpoint: 0
OpenRmEnableUnsupportedGpus: 0
DmaRemapPeerMmio: 1
RegistryDwords: ""
RegistryDwordsPerDevice: ""
RmMsg: ""
GpuBlacklist: ""
TemporaryFilePath: ""
ExcludedGpus: ""
`
