package nvmlgpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// MIGProfileName names a MIG device the way nvidia-smi and Slurm do:
// "<g>g.<mem>gb" when the compute instance spans the whole GPU instance,
// "<c>c.<g>g.<mem>gb" otherwise, plus the GPU instance profile's attribute
// suffix ("+me" for the media-extension profiles, see migProfileSuffix).
// Real NVML names its GPU instance profiles itself (nvmlDeviceGetGpuInstanceProfileInfoV);
// this is for drivers and mocks that do not.
//
// giSlices and ciSlices are the profiles' sliceCount; memMB is the GPU
// instance profile's memorySizeMB; totalBytes is the whole GPU's memory
// (nvmlDeviceGetMemoryInfo total). The GB figure is go-nvlib's (and so
// mig-parted's): the GI's share of the GPU's memory rounded up to eighths,
// times the GPU's memory in whole GiB, rounded; 19968 MiB of a 40 GiB A100
// is "20gb", 9856 MiB of an 80 GiB H100 "10gb". A memorySizeMB that is a
// whole number of GiB is taken as it is: go-nvml's H200 and B200 mocks give
// 18432 MiB for 1g.18gb of a 141 GiB GPU, which the eighths rule would call
// 35gb; real profiles are never whole GiB.
func MIGProfileName(giSlices, ciSlices uint32, memMB, totalBytes uint64, suffix string) string {
	return migCIPrefix(giSlices, ciSlices) + fmt.Sprintf("%dg.%dgb%s", giSlices, migMemoryGB(memMB, totalBytes), suffix)
}

// migCIPrefix is "<c>c." for a compute instance smaller than its GPU
// instance, else "".
func migCIPrefix(giSlices, ciSlices uint32) string {
	if ciSlices == 0 || ciSlices == giSlices {
		return ""
	}
	return fmt.Sprintf("%dc.", ciSlices)
}

func migMemoryGB(memMB, totalBytes uint64) uint64 {
	const mib, gib = 1 << 20, 1 << 30
	if totalBytes == 0 || memMB%1024 == 0 {
		return (memMB + 1023) / 1024
	}
	frac := float64(memMB) * mib / float64(totalBytes)
	frac = math.Ceil(frac*8) / 8
	totalGB := float64((totalBytes + gib - 1) / gib)
	return uint64(math.Round(frac * totalGB))
}

// nvmlProfileName turns the name NVML gives a GPU instance profile
// ("MIG 1g.10gb+me") into gpuprep's ("1g.10gb+me"); "" when empty.
func nvmlProfileName(raw []int8) string {
	s := strings.TrimSpace(cString(raw))
	s = strings.TrimSpace(strings.TrimPrefix(s, "MIG"))
	return s
}

// migProfileSuffix is the attribute suffix nvidia-smi appends for a GPU
// instance profile index (nvml.GPU_INSTANCE_PROFILE_*): "+me" for the
// media-extension profiles, "-me" without media engines, "+me.all" with all
// of them, "+gfx" for graphics-capable profiles.
func migProfileSuffix(profileIndex int) string {
	switch profileIndex {
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		return "+me"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		return "-me"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, nvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		return "+me.all"
	case nvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		nvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, nvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		return "+gfx"
	}
	return ""
}
