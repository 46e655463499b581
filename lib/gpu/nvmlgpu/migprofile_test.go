package nvmlgpu

import (
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
