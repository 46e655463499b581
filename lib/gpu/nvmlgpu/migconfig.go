package nvmlgpu

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
	"gpuprep/lib/textfmt"
)

var _ gpu.MIGConfigurer = (*NVML)(nil)

// SetMIGLayout makes GPU index's MIG devices the given profiles; none turns
// MIG off. In order: destroy every compute instance and GPU instance
// (nvmlComputeInstanceDestroy, nvmlGpuInstanceDestroy), set the mode
// (nvmlDeviceSetMigMode, which resets the GPU itself where it can), and
// create one GPU instance (nvmlDeviceCreateGpuInstance) with one compute
// instance (nvmlGpuInstanceCreateComputeInstance) per profile, largest
// first, as nvidia-smi's automatic placement prefers. Every profile name is
// resolved before anything is destroyed, so an unknown name changes
// nothing.
func (b *NVML) SetMIGLayout(index int, profiles []string) error {
	h, err := b.handle(index)
	if err != nil {
		return err
	}
	want, err := b.migSpecs(h, index, profiles)
	if err != nil {
		return err
	}
	slices.SortStableFunc(want, func(a, b migSpec) int { return int(b.gi.SliceCount) - int(a.gi.SliceCount) })

	if err := destroyMIG(h, index); err != nil {
		return err
	}
	if err := setMIGMode(h, index, len(want) > 0); err != nil {
		return err
	}
	for _, s := range want {
		if err := createMIGDevice(h, index, s); err != nil {
			return err
		}
	}
	return nil
}

// CheckMIGLayout resolves every profile name against GPU index's GPU
// instance profiles (nvmlDeviceGetGpuInstanceProfileInfo), changing
// nothing: an error names a profile this GPU does not have.
func (b *NVML) CheckMIGLayout(index int, profiles []string) error {
	h, err := b.handle(index)
	if err != nil {
		return err
	}
	_, err = b.migSpecs(h, index, profiles)
	return err
}

func (b *NVML) migSpecs(h nvml.Device, index int, profiles []string) ([]migSpec, error) {
	names := &migNamer{parent: h, named: b.opt.Real}
	var want []migSpec
	for _, p := range profiles {
		s, err := names.spec(p)
		if err != nil {
			return nil, fmt.Errorf("nvml: GPU %d: MIG profile %q: %w", index, p, err)
		}
		want = append(want, s)
	}
	return want, nil
}

// migSpec is one wanted MIG device: its GPU instance profile and the slices
// of its compute instance.
type migSpec struct {
	name     string
	gi       nvml.GpuInstanceProfileInfo
	ciSlices uint32
}

// spec resolves a profile name ("3g.40gb", "1c.3g.40gb") against the GPU's
// GPU instance profile table, named as MIG reads name them.
func (n *migNamer) spec(name string) (migSpec, error) {
	if err := n.load(); err != nil {
		return migSpec{}, err
	}
	giName, ciSlices := name, uint32(0)
	if c, rest, ok := strings.Cut(name, "c."); ok {
		v, err := strconv.ParseUint(c, 10, 32)
		if err != nil || v == 0 {
			return migSpec{}, fmt.Errorf("bad compute instance size %q", c)
		}
		giName, ciSlices = rest, uint32(v)
	}
	var known []string
	byIndex := slices.SortedFunc(maps.Values(n.giByID), func(a, b giProfile) int { return a.index - b.index })
	for _, gp := range byIndex {
		gn := gp.name
		if gn == "" {
			gn = MIGProfileName(gp.slices, gp.slices, gp.memMB, n.total, migProfileSuffix(gp.index))
		}
		known = append(known, gn)
		if gn != giName {
			continue
		}
		info, ret := n.parent.GetGpuInstanceProfileInfo(gp.index)
		if ret != nvml.SUCCESS {
			return migSpec{}, fmt.Errorf("GPU instance profile %d: %w", gp.index, nvmlError(ret))
		}
		if ciSlices == 0 {
			ciSlices = info.SliceCount
		}
		if ciSlices > info.SliceCount {
			return migSpec{}, fmt.Errorf("a %d-slice compute instance does not fit a %d-slice GPU instance", ciSlices, info.SliceCount)
		}
		return migSpec{name: name, gi: info, ciSlices: ciSlices}, nil
	}
	slices.Sort(known)
	return migSpec{}, fmt.Errorf("this GPU has no such profile (it has %s)", strings.Join(slices.Compact(known), ", "))
}

// destroyMIG destroys every compute instance and GPU instance of the GPU,
// found through nvmlDeviceGetGpuInstances and
// nvmlGpuInstanceGetComputeInstances over every profile. A GPU without MIG
// has none.
func destroyMIG(h nvml.Device, index int) error {
	cur, _, ret := h.GetMigMode()
	if ret == nvml.ERROR_NOT_SUPPORTED || (ret == nvml.SUCCESS && cur != nvml.DEVICE_MIG_ENABLE) {
		return nil
	}
	if ret != nvml.SUCCESS {
		return gpuError(h, index, "MIG mode", ret)
	}
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		info, ret := h.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS {
			continue
		}
		gis, ret := h.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			return gpuError(h, index, fmt.Sprintf("GPU instances of profile %d", info.Id), ret)
		}
		for _, gi := range gis {
			if err := destroyComputeInstances(h, index, gi); err != nil {
				return err
			}
			if ret := gi.Destroy(); ret != nvml.SUCCESS {
				return gpuError(h, index, "destroy a GPU instance", ret)
			}
		}
	}
	return nil
}

func destroyComputeInstances(h nvml.Device, index int, gi nvml.GpuInstance) error {
	for p := 0; p < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; p++ {
		for e := 0; e < nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT; e++ {
			info, ret := gi.GetComputeInstanceProfileInfo(p, e)
			if ret != nvml.SUCCESS {
				continue
			}
			cis, ret := gi.GetComputeInstances(&info)
			if ret != nvml.SUCCESS {
				return gpuError(h, index, "compute instances", ret)
			}
			for _, ci := range cis {
				if ret := ci.Destroy(); ret != nvml.SUCCESS {
					return gpuError(h, index, "destroy a compute instance", ret)
				}
			}
		}
	}
	return nil
}

// setMIGMode turns MIG mode on or off (nvmlDeviceSetMigMode) and reads the
// mode back (nvmlDeviceGetMigMode): a mode still pending means the reset
// NVML attempts did not happen, an error wrapping gpu.ErrResetRequired.
func setMIGMode(h nvml.Device, index int, on bool) error {
	want := nvml.DEVICE_MIG_DISABLE
	if on {
		want = nvml.DEVICE_MIG_ENABLE
	}
	cur, pend, ret := h.GetMigMode()
	if ret != nvml.SUCCESS {
		return gpuError(h, index, "MIG mode", ret)
	}
	if cur == want && pend == want {
		return nil
	}
	activation, ret := h.SetMigMode(want)
	if ret != nvml.SUCCESS {
		return gpuError(h, index, fmt.Sprintf("set MIG mode %s", textfmt.EnabledDisabled(on)), ret)
	}
	if cur, _, ret = h.GetMigMode(); ret != nvml.SUCCESS {
		return gpuError(h, index, "MIG mode", ret)
	}
	if cur == want {
		return nil
	}
	return fmt.Errorf("nvml: GPU %d (%s): MIG mode %s takes effect only after a %w that the driver could not do (activation status: %v); reset the GPU with nothing using it (nvidia-smi -r -i %d) or reboot",
		index, busOf(h), textfmt.EnabledDisabled(on), gpu.ErrResetRequired, activation, index)
}

// createMIGDevice creates one GPU instance of s's profile and in it one
// compute instance of s.ciSlices slices (nvmlGpuInstanceGetComputeInstanceProfileInfo
// over the compute instance profiles, shared engines).
func createMIGDevice(h nvml.Device, index int, s migSpec) error {
	gi, ret := h.CreateGpuInstance(&s.gi)
	if ret != nvml.SUCCESS {
		return gpuError(h, index, "create GPU instance "+s.name, ret)
	}
	for p := 0; p < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; p++ {
		ci, ret := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || ci.SliceCount != s.ciSlices {
			continue
		}
		if _, ret := gi.CreateComputeInstance(&ci); ret != nvml.SUCCESS {
			return gpuError(h, index, "create compute instance "+s.name, ret)
		}
		return nil
	}
	return fmt.Errorf("nvml: GPU %d: MIG %s: no %d-slice compute instance profile", index, s.name, s.ciSlices)
}
