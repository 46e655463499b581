package nvmlgpu

import "testing"

func TestPciInfoRoundTrip(t *testing.T) {
	p := PCIInfoOf("0000:db:00.0", 0x233010de)
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
