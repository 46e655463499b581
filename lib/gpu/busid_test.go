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
