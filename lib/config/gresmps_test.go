package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// gres.mps_gpus takes "all", "none", a model or type, or a list of indexes,
// models and types, and selects GPUs the way [mig.layout]'s selectors do;
// the built-in marks none, 100 each.
func TestGresMPS(t *testing.T) {
	c := Default()
	if !c.Gres.MPSGPUs.None() || c.Gres.MPSCount != DefaultMPSCount {
		t.Errorf("built-in mps_gpus %v, mps_count %d: want none, %d", c.Gres.MPSGPUs, c.Gres.MPSCount, DefaultMPSCount)
	}
	h200 := MIGGPU{Index: 2, Model: "NVIDIA H200", Type: "h200"}
	h100 := MIGGPU{Index: 0, Model: "NVIDIA H100 80GB HBM3", Type: "h100"}
	for _, tc := range []struct {
		in         string
		want       GPUSelection
		h200, h100 bool
	}{
		{`"all"`, GPUSelection{"all"}, true, true},
		{`"none"`, GPUSelection{"none"}, false, false},
		{`[]`, GPUSelection{}, false, false},
		{`[0, 2]`, GPUSelection{"0", "2"}, true, true},
		{`[2]`, GPUSelection{"2"}, true, false},
		{`"H200"`, GPUSelection{"H200"}, true, false},
		{`"NVIDIA H100 80GB HBM3"`, GPUSelection{"NVIDIA H100 80GB HBM3"}, false, true},
		{`["h100", 5]`, GPUSelection{"h100", "5"}, false, true},
	} {
		c, err := Parse("g.toml", []byte("[gres]\nmps_gpus = "+tc.in+"\nmps_count = 200\n"))
		if err != nil {
			t.Errorf("mps_gpus = %s: %v", tc.in, err)
			continue
		}
		s := c.Gres.MPSGPUs
		if !slices.Equal(s, tc.want) || c.Gres.MPSCount != 200 || s.Matches(h200) != tc.h200 || s.Matches(h100) != tc.h100 {
			t.Errorf("mps_gpus = %s: %q (count %d), matches H200 %v, H100 %v", tc.in, s, c.Gres.MPSCount, s.Matches(h200), s.Matches(h100))
		}
		if s.None() == (tc.h200 || tc.h100) {
			t.Errorf("mps_gpus = %s: None() = %v", tc.in, s.None())
		}
	}
}

// Bad values are one-line errors naming the file, the line and the key.
func TestGresMPSErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[gres]\nmps_gpus = 3\n", `g.toml:2: gres.mps_gpus = 3: must be "all", "none", a GPU model or type, or a list`},
		{"[gres]\nmps_gpus = [true]\n", `g.toml:2: gres.mps_gpus = [true]: must be "all"`},
		{"[gres]\nmps_gpus = [64]\n", `g.toml:2: gres.mps_gpus = [64]: GPU index 64: must be 0..63`},
		{"[gres]\nmps_gpus = [\"all\", 1]\n", `g.toml:2: gres.mps_gpus = ["all", 1]: "all" stands alone, not in a list`},
		{"[gres]\nmps_gpus = [1, 1]\n", `g.toml:2: gres.mps_gpus = [1, 1]: "1" is given twice`},
		{"[gres]\nmps_gpus = \"h200;rm\"\n", `g.toml:2: gres.mps_gpus = "h200;rm": "h200;rm" is not a GPU index, a GPU model, a GPU type, "all" or "none"`},
		{"[gres]\n\nmps_count = 0\n", `g.toml:3: gres.mps_count = 0: must be 1..1000000`},
		{"[gres]\nmps_count = \"100\"\n", `g.toml:2: gres.mps_count = "100": must be an integer`},
	} {
		_, err := Parse("g.toml", []byte(tc.in))
		var e *Error
		if err == nil || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v\nwant one line starting %s", tc.in, err, tc.want)
		}
	}
}
