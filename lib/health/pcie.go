package health

import (
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// PCIeLink is a PCI device's link as sysfs reports it.
type PCIeLink struct {
	Width, MaxWidth int
	Speed, MaxSpeed string  // "32.0 GT/s PCIe"
	GTs, MaxGTs     float64 // parsed speeds; 0 for "Unknown"
}

// ReadPCIeLink reads /sys/bus/pci/devices/<bus>/{current,max}_link_{width,speed}.
// An absent file is an error wrapping fs.ErrNotExist (a VM without PCIe
// link attributes); garbage is an error naming the file.
func ReadPCIeLink(r host.Root, bus string) (PCIeLink, error) {
	var l PCIeLink
	dir := "/sys/bus/pci/devices/" + bus + "/"
	var err error
	if l.Width, err = readWidth(r, dir+"current_link_width"); err != nil {
		return l, err
	}
	if l.MaxWidth, err = readWidth(r, dir+"max_link_width"); err != nil {
		return l, err
	}
	if l.Speed, l.GTs, err = readSpeed(r, dir+"current_link_speed"); err != nil {
		return l, err
	}
	if l.MaxSpeed, l.MaxGTs, err = readSpeed(r, dir+"max_link_speed"); err != nil {
		return l, err
	}
	return l, nil
}

func readWidth(r host.Root, p string) (int, error) {
	s, err := r.ReadString(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "x"))
	if err != nil || n < 0 || n > 64 {
		return 0, fmt.Errorf("%s: %q is not a link width", p, textfmt.Fit(s, 60))
	}
	return n, nil
}

// readSpeed reads "32.0 GT/s PCIe" (older kernels: "8 GT/s", "2.5 GT/s");
// "Unknown" reads as 0.
func readSpeed(r host.Root, p string) (string, float64, error) {
	s, err := r.ReadString(p)
	if err != nil {
		return "", 0, err
	}
	gts, err := ParseLinkSpeed(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return s, gts, nil
}

// ParseLinkSpeed parses a sysfs link speed: "32.0 GT/s PCIe" is 32; "Unknown"
// is 0.
func ParseLinkSpeed(s string) (float64, error) {
	if strings.HasPrefix(s, "Unknown") {
		return 0, nil
	}
	num, _, ok := strings.Cut(s, " GT/s")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a link speed such as \"32.0 GT/s PCIe\"", textfmt.Fit(s, 60))
	}
	return v, nil
}
