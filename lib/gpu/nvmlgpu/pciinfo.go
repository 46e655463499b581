package nvmlgpu

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// busIDOf reads the bus id out of an nvmlPciInfo_t: busId ("00000000:18:00.0"),
// else busIdLegacy ("0000:18:00.0"), else the domain/bus/device numbers.
func busIDOf(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return gpu.CanonicalBusID(s)
	}
	if s := cString(p.BusIdLegacy[:]); s != "" {
		return gpu.CanonicalBusID(s)
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
}

// PCIInfoOf builds an nvmlPciInfo_t for a canonical bus id, as NVML fills it
// (busId with an 8-digit domain, upper case).
func PCIInfoOf(busID string, deviceID uint32) nvml.PciInfo {
	var p nvml.PciInfo
	var dom, bus, dev, fn uint64
	if _, err := fmt.Sscanf(busID, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err == nil {
		p.Domain, p.Bus, p.Device = uint32(dom), uint32(bus), uint32(dev)
	}
	p.PciDeviceId = deviceID
	putCString(p.BusId[:], strings.ToUpper(fmt.Sprintf("%08x:%02x:%02x.%x", dom, bus, dev, fn)))
	putCString(p.BusIdLegacy[:], strings.ToUpper(fmt.Sprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn)))
	return p
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func putCString(dst []int8, s string) {
	for i := 0; i < len(dst)-1 && i < len(s); i++ {
		dst[i] = int8(s[i])
	}
}
