package gpu

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestMIGProfileName(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		g, c     uint32
		memMB    uint64
		totalMiB uint64
		suffix   string
		want     string
	}{
		{3, 3, 19968, 40960, "", "3g.20gb"}, // A100 40GB
		{2, 2, 9856, 40960, "", "2g.10gb"},  // A100 40GB
		{1, 1, 4864, 40960, "", "1g.5gb"},   // A100 40GB
		{7, 7, 40192, 40960, "", "7g.40gb"}, // A100 40GB
		{3, 3, 40192, 81920, "", "3g.40gb"}, // A100/H100 80GB
		{1, 1, 9856, 81920, "", "1g.10gb"},  // H100 80GB
		{1, 1, 19968, 81920, "", "1g.20gb"}, // H100 80GB 1_SLICE_REV2
		{1, 1, 9856, 81920, "+me", "1g.10gb+me"},
		{1, 1, 9856, 81559, "", "1g.10gb"},     // a real H100's total, a little under 80 GiB
		{3, 1, 40192, 81920, "", "1c.3g.40gb"}, // compute instance smaller than its GI
		{1, 1, 18432, 144384, "", "1g.18gb"},   // H200 141GB
		{7, 7, 0, 0, "", "7g.0gb"},
	} {
		got := MIGProfileName(tc.g, tc.c, tc.memMB, tc.totalMiB*mib, tc.suffix)
		if got != tc.want {
			t.Errorf("MIGProfileName(%d, %d, %d MiB of %d MiB) = %q, want %q", tc.g, tc.c, tc.memMB, tc.totalMiB, got, tc.want)
		}
	}
	if s := migProfileSuffix(nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1); s != "+me" {
		t.Errorf("suffix of 1_SLICE_REV1 = %q", s)
	}
	if s := migProfileSuffix(nvml.GPU_INSTANCE_PROFILE_3_SLICE); s != "" {
		t.Errorf("suffix of 3_SLICE = %q", s)
	}
}

func TestParseMIGMinors(t *testing.T) {
	m, err := ParseMIGMinors("mig-minors", []byte("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n\ngpu1/gi1/access 147\ngpu1/gi1/ci0/access 148\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.GI(1, 1) != 147 || m.CI(1, 1, 0) != 148 || m.GI(0, 0) != 3 || m.CI(0, 0, 0) != 4 {
		t.Errorf("lookups wrong: %v", m)
	}
	if m.GI(2, 0) != -1 || m.CI(0, 0, 7) != -1 {
		t.Error("absent entries should be -1")
	}
	var none MIGMinors
	if none.GI(0, 0) != -1 {
		t.Error("nil map should give -1")
	}
	for _, bad := range []string{"config 1\ngpu0/gi0/access\n", "config 1\n\ngpu0/gi0/access x\n", "a b c\n", "config -1\n"} {
		_, err := ParseMIGMinors("/proc/driver/nvidia-caps/mig-minors", []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "/proc/driver/nvidia-caps/mig-minors:") {
			t.Errorf("%q: error %v, want one naming file:line", bad, err)
		}
	}
	_, err = ParseMIGMinors("f", []byte("config 1\n\ngpu0/gi0/access x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "f:3:") {
		t.Errorf("error %v, want f:3:", err)
	}
}

// The driver's table (as captured on the 2x H200 node) and the formula the
// mock uses for a root without one agree.
func TestDriverMIGMinorsFormula(t *testing.T) {
	shape, ok := mockShape("dgxa100")
	if !ok {
		t.Skip("no dgxa100 shape")
	}
	m := driverMIGMinors(shape)
	for _, g := range shape.GPUs {
		for _, d := range g.MIGDevices {
			if m.GI(g.Minor, d.GI) != d.GICapMinor || m.CI(g.Minor, d.GI, d.CI) != d.CICapMinor {
				t.Errorf("gpu%d gi%d ci%d: formula %d/%d, shape %d/%d", g.Minor, d.GI, d.CI,
					m.GI(g.Minor, d.GI), m.CI(g.Minor, d.GI, d.CI), d.GICapMinor, d.CICapMinor)
			}
		}
	}
	if m.GI(0, 0) != 3 || m.CI(0, 0, 1) != 5 || m.GI(0, 1) != 12 {
		t.Errorf("gpu0 entries: %d %d %d", m.GI(0, 0), m.CI(0, 0, 1), m.GI(0, 1))
	}
}
