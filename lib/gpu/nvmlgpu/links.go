package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvlinkEnds lists the far ends of a GPU's active NVLinks: for each link
// 0..NVLINK_MAX_LINKS-1 that nvmlDeviceGetNvLinkState reports enabled,
// nvmlDeviceGetNvLinkRemoteDeviceType, and nvmlDeviceGetNvLinkRemotePciInfo
// when the far end is not a switch. The walk stops at the first link NVML
// rejects (NOT_SUPPORTED: no NVLink; INVALID_ARGUMENT: past the GPU's last
// link), so a GPU costs about two calls per link it has.
func nvlinkEnds(h nvml.Device, index int) ([]linkEnd, error) {
	var ends []linkEnd
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, ret := h.GetNvLinkState(l)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_FUNCTION_NOT_FOUND:
			return ends, nil
		default:
			return nil, fmt.Errorf("nvml: GPU %d: NVLink %d state: %w", index, l, nvmlError(ret))
		}
		if st != nvml.FEATURE_ENABLED {
			continue
		}
		typ, ret := h.GetNvLinkRemoteDeviceType(l)
		if ret != nvml.SUCCESS {
			typ = nvml.NVLINK_DEVICE_TYPE_UNKNOWN
		}
		switch typ {
		case nvml.NVLINK_DEVICE_TYPE_SWITCH:
			ends = append(ends, linkEnd{Kind: linkToSwitch})
			continue
		case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
			ends = append(ends, linkEnd{Kind: linkToCPU})
			continue
		}
		pci, ret := h.GetNvLinkRemotePciInfo(l)
		if ret != nvml.SUCCESS {
			// Active, but the far end is unknown: count it with the fabric.
			ends = append(ends, linkEnd{Kind: linkToSwitch})
			continue
		}
		ends = append(ends, linkEnd{Kind: linkToGPU, BusID: busIDOf(pci)})
	}
	return ends, nil
}
