package nccl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseIBHCA(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want HCASpec
	}{
		{"mlx5_0", HCASpec{HCAs: []HCAPort{{Name: "mlx5_0", Port: -1}}}},
		{"=mlx5_0:1,mlx5_1:1", HCASpec{Exact: true, HCAs: []HCAPort{{"mlx5_0", 1, "1"}, {"mlx5_1", 1, "1"}}}},
		{"^mlx5_3", HCASpec{Exclude: true, HCAs: []HCAPort{{Name: "mlx5_3", Port: -1}}}},
		{"^=mlx5_3:2", HCASpec{Exclude: true, Exact: true, HCAs: []HCAPort{{"mlx5_3", 2, "2"}}}},
		// "=^" is not "^=": NCCL takes "^" as part of the name.
		{"=^mlx5_3", HCASpec{Exact: true, HCAs: []HCAPort{{Name: "^mlx5_3", Port: -1}}}},
		// Nothing is trimmed; empty elements and a lone port are skipped.
		{"mlx5_0, mlx5_1,,:1,", HCASpec{HCAs: []HCAPort{{Name: "mlx5_0", Port: -1}, {Name: " mlx5_1", Port: -1}}}},
		// Ports as atoi reads them.
		{"a:x,b:2x,c:,d:007", HCASpec{HCAs: []HCAPort{{"a", 0, "x"}, {"b", 2, "2x"}, {"c", 0, ""}, {"d", 7, "007"}}}},
		{"a:1:2", HCASpec{HCAs: []HCAPort{{"a", 1, "1:2"}}}},
		{"", HCASpec{}},
		{"^", HCASpec{Exclude: true}},
	} {
		got := ParseIBHCA(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseIBHCA(%q) =\n %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

func TestPortOK(t *testing.T) {
	for in, want := range map[string]bool{"a": true, "a:1": true, "a:12": true, "a:x": false, "a:-1": false, "a: 1": false, "a:": false} {
		h := ParseIBHCA(in).HCAs[0]
		if got := h.PortOK(); got != want {
			t.Errorf("%q: PortOK = %v, want %v", in, got, want)
		}
	}
}

// FuzzParseIBHCA: any input parses; every name is non-empty and has no
// comma; a port-less element has port -1; writing the spec back and
// parsing it again gives the same spec.
func FuzzParseIBHCA(f *testing.F) {
	for _, s := range []string{"mlx5_0", "=mlx5_0:1,mlx5_1:1", "^=a:2", "=^a", "a,,:1,b:x", "a:1:2", "", "^", "=", "a:-1", "a: 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec := ParseIBHCA(s)
		for _, h := range spec.HCAs {
			if h.Name == "" || strings.ContainsAny(h.Name, ",:") {
				t.Fatalf("%q: bad name %q", s, h.Name)
			}
			if h.PortText == "" && h.Port != -1 && !strings.Contains(s, h.Name+":") {
				t.Fatalf("%q: %q has port %d without one written", s, h.Name, h.Port)
			}
			if strings.ContainsRune(h.PortText, ',') {
				t.Fatalf("%q: port text %q crosses a comma", s, h.PortText)
			}
		}
		again := ParseIBHCA(spec.String())
		if !reflect.DeepEqual(again, spec) {
			t.Fatalf("%q: round trip %q gives %+v, want %+v", s, spec.String(), again, spec)
		}
	})
}

func TestStrtol(t *testing.T) {
	for _, tc := range []struct {
		in string
		v  int64
		ok bool
	}{
		{"1", 1, true}, {" 1", 1, true}, {"01", 1, true}, {"0x1", 1, true}, {"0X10", 16, true},
		{"010", 8, true}, {"08", 0, true}, {"1abc", 1, true}, {"abc", 0, true}, {"-3", -3, true},
		{"+2", 2, true}, {"0x", 0, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775808", -1 << 63, true}, {"99999999999999999999999", 0, false},
	} {
		v, ok := strtol(tc.in)
		if v != tc.v || ok != tc.ok {
			t.Errorf("strtol(%q) = %d, %v; want %d, %v", tc.in, v, ok, tc.v, tc.ok)
		}
	}
}
