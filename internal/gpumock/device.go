package gpumock

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/internal/nodeshape"
	"gpuprep/lib/gpu/nvmlgpu"
)

// mockSwitchBusID is the far end NVML reports for a link into an NVSwitch
// fabric on an HGX board ("FFFFFFFF:FF:FF.0", as seen on the 2x H200 node).
const mockSwitchBusID = "ffffffff:ff:ff.0"

// completeDevice gives mock GPU i the identity and locality of shape GPU i:
// the server.Device fields (PciBusID, UUID, Minor, Index) and the funcs the
// mock leaves nil: GetPciInfo, GetNumaNodeId, GetCpuAffinity and the NVLink
// getters. The product name is the shape's (the dgxa100 mock calls its GPU
// "Mock NVIDIA A100-SXM4-40GB").
func completeDevice(d *server.Device, i int, m mockModel, shape nodeshape.Shape, all []*server.Device) {
	g := shape.GPUs[i]
	d.PciBusID = g.BusID
	d.UUID = g.UUID
	d.Minor = g.Minor
	d.Index = i
	if g.Name != "" {
		d.Config.Name = g.Name
	}
	devID := d.Config.PciDeviceId
	if g.DeviceID != 0 {
		devID = uint32(g.DeviceID)<<16 | 0x10de
	}
	pci := nvmlgpu.PCIInfoOf(g.BusID, devID)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pci, nvml.SUCCESS }

	completeLinks(d, g, m, all)
}

// completeLinks lays out GPU g's NVLinks: links 0..NVSwitchLinks-1 into the
// switch fabric, then DirectLinks[j] links to GPU j, then disabled links up
// to the generation's link count. A GPU without links answers NOT_SUPPORTED.
func completeLinks(d *server.Device, g nodeshape.GPU, m mockModel, all []*server.Device) {
	var peers []int // per active link: -1 for the switch, else the GPU index
	for k := 0; k < g.NVSwitchLinks; k++ {
		peers = append(peers, -1)
	}
	for j, n := range g.DirectLinks {
		for k := 0; k < n; k++ {
			peers = append(peers, j)
		}
	}
	total := max(m.maxLinks, len(peers))
	check := func(l int) nvml.Return {
		switch {
		case len(peers) == 0:
			return nvml.ERROR_NOT_SUPPORTED
		case l < 0 || l >= total:
			return nvml.ERROR_INVALID_ARGUMENT
		case l >= len(peers):
			return nvml.ERROR_NOT_FOUND // a disabled link has no far end
		}
		return nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		switch ret := check(l); ret {
		case nvml.SUCCESS:
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		case nvml.ERROR_NOT_FOUND:
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		default:
			return nvml.FEATURE_DISABLED, ret
		}
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		if ret := check(l); ret != nvml.SUCCESS {
			return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, ret
		}
		if peers[l] < 0 {
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		}
		return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		if ret := check(l); ret != nvml.SUCCESS {
			return nvml.PciInfo{}, ret
		}
		if peers[l] < 0 || peers[l] >= len(all) {
			return nvmlgpu.PCIInfoOf(mockSwitchBusID, 0), nvml.SUCCESS
		}
		return all[peers[l]].GetPciInfo()
	}
}
