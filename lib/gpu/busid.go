package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// CanonicalBusID turns a PCI address as NVML or the kernel writes it
// ("00000000:18:00.0", "0000:18:00.0", "18:00.0", any case, NUL-padded) into
// the canonical form used throughout gpuprep: the domain in at least 4 hex
// digits, lower case ("0000:18:00.0"), as sysfs names PCI devices. A string
// that is not a PCI address is returned trimmed and lower-cased.
func CanonicalBusID(s string) string {
	if b, ok := parseBusID(s); ok {
		return b
	}
	return strings.ToLower(strings.TrimSpace(strings.TrimRight(s, "\x00")))
}

// parseBusID is CanonicalBusID that says whether s was a PCI address.
func parseBusID(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(strings.TrimRight(s, "\x00")))
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	default:
		return "", false
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		return "", false
	}
	d, err1 := strconv.ParseUint(dom, 16, 32)
	b, err2 := strconv.ParseUint(bus, 16, 8)
	v, err3 := strconv.ParseUint(dev, 16, 8)
	f, err4 := strconv.ParseUint(fn, 16, 8)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || v > 0x1f || f > 7 {
		return "", false
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f), true
}
