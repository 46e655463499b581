package gpu

import "testing"

func TestCanonicalBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0":     "0000:18:00.0",
		"0000:18:00.0":         "0000:18:00.0",
		"00000000:DB:00.0":     "0000:db:00.0",
		"18:00.0":              "0000:18:00.0",
		" 0000:3A:00.1\n":      "0000:3a:00.1",
		"00000009:01:00.0":     "0009:01:00.0",
		"FFFFFFFF:FF:FF.0":     "ffffffff:ff:ff.0",
		"0000:18:00.0\x00\x00": "0000:18:00.0",
		"not a bus":            "not a bus",
		"0000:18:20.0":         "0000:18:20.0", // device 0x20 > 0x1f: not PCI
		"0000:18:00":           "0000:18:00",
	} {
		if got := CanonicalBusID(in); got != want {
			t.Errorf("CanonicalBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPciInfoRoundTrip(t *testing.T) {
	p := pciInfoOf("0000:db:00.0", 0x233010de)
	if got := cString(p.BusId[:]); got != "00000000:DB:00.0" {
		t.Errorf("busId = %q, want NVML's form 00000000:DB:00.0", got)
	}
	if got := cString(p.BusIdLegacy[:]); got != "0000:DB:00.0" {
		t.Errorf("busIdLegacy = %q", got)
	}
	if got := busIDOf(p); got != "0000:db:00.0" {
		t.Errorf("busIDOf = %q", got)
	}
	p.BusId = [32]int8{}
	if got := busIDOf(p); got != "0000:db:00.0" {
		t.Errorf("busIDOf from legacy = %q", got)
	}
	p.BusIdLegacy = [16]int8{}
	if got := busIDOf(p); got != "0000:db:00.0" {
		t.Errorf("busIDOf from numbers = %q", got)
	}
}
