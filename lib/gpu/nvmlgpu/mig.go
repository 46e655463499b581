package nvmlgpu

import (
	"fmt"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
)

// migState reads a GPU's MIG mode (nvmlDeviceGetMigMode; NOT_SUPPORTED: not
// MIG capable) and, when MIG is on, its MIG devices: nvmlDeviceGetMaxMigDeviceCount
// and nvmlDeviceGetMigDeviceHandleByIndex, each with its GPU/compute instance
// ids, UUID and profile name. Cap minors are filled in by the caller. named
// says the handles are real NVML's, which can name profiles themselves (a
// go-nvml mock cannot).
func migState(h nvml.Device, index int, named bool) (gpu.MIGState, error) {
	var st gpu.MIGState
	cur, pend, ret := h.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return st, nil
	default:
		return st, fmt.Errorf("nvml: GPU %d: MIG mode: %w", index, nvmlError(ret))
	}
	st.Capable = true
	st.Current = cur == nvml.DEVICE_MIG_ENABLE
	st.Pending = pend == nvml.DEVICE_MIG_ENABLE
	if !st.Current {
		return st, nil
	}
	max, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return st, fmt.Errorf("nvml: GPU %d: max MIG device count: %w", index, nvmlError(ret))
	}
	names := &migNamer{parent: h, named: named}
	for k := 0; k < max; k++ {
		md, ret := h.GetMigDeviceHandleByIndex(k)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			return st, fmt.Errorf("nvml: GPU %d: MIG device %d: %w", index, k, nvmlError(ret))
		}
		m, err := migDevice(md, names)
		if err != nil {
			return st, fmt.Errorf("nvml: GPU %d: MIG device %d: %w", index, k, err)
		}
		st.Devices = append(st.Devices, m)
	}
	sort.Slice(st.Devices, func(a, b int) bool {
		x, y := st.Devices[a], st.Devices[b]
		if x.GI != y.GI {
			return x.GI < y.GI
		}
		return x.CI < y.CI
	})
	return st, nil
}

// migDevice reads one MIG device handle: nvmlDeviceGetGpuInstanceId,
// GetComputeInstanceId, GetUUID, and its profile name.
func migDevice(md nvml.Device, names *migNamer) (gpu.MIGDevice, error) {
	m := gpu.MIGDevice{GICapMinor: -1, CICapMinor: -1}
	var ret nvml.Return
	if m.GI, ret = md.GetGpuInstanceId(); ret != nvml.SUCCESS {
		return m, fmt.Errorf("GPU instance id: %w", nvmlError(ret))
	}
	if m.CI, ret = md.GetComputeInstanceId(); ret != nvml.SUCCESS {
		return m, fmt.Errorf("compute instance id: %w", nvmlError(ret))
	}
	if m.UUID, ret = md.GetUUID(); ret != nvml.SUCCESS {
		return m, fmt.Errorf("uuid: %w", nvmlError(ret))
	}
	p, err := names.name(m.GI, m.CI)
	if err != nil {
		return m, fmt.Errorf("GI %d CI %d profile: %w", m.GI, m.CI, err)
	}
	m.Profile = p
	return m, nil
}

// migNamer names MIG devices of one GPU, caching the GPU's profile tables.
type migNamer struct {
	parent   nvml.Device
	named    bool                 // ask NVML for profile names (real library only)
	total    uint64               // GPU memory, bytes (nvmlDeviceGetMemoryInfo)
	giByID   map[uint32]giProfile // GPU instance profiles by profile id
	ciSlices map[[2]uint32]uint32 // (GI profile id, CI profile id) -> slices
}

type giProfile struct {
	index  int    // nvml.GPU_INSTANCE_PROFILE_* that gave it
	name   string // NVML's own name for it ("3g.40gb"), "" if it gave none
	slices uint32
	memMB  uint64
}

// name finds the GPU instance (nvmlDeviceGetGpuInstanceById,
// nvmlGpuInstanceGetInfo) and compute instance
// (nvmlGpuInstanceGetComputeInstanceById, nvmlComputeInstanceGetInfo), looks
// their profile ids up in the GPU's profile tables
// (nvmlDeviceGetGpuInstanceProfileInfo over every GPU_INSTANCE_PROFILE_*,
// nvmlGpuInstanceGetComputeInstanceProfileInfo over every
// COMPUTE_INSTANCE_PROFILE_*) and formats the name with MIGProfileName. Real
// NVML's profile ids are not the GPU_INSTANCE_PROFILE_* indexes (3g.20gb is
// id 9 on an A100), hence the tables.
func (n *migNamer) name(giID, ciID int) (string, error) {
	if err := n.load(); err != nil {
		return "", err
	}
	gi, ret := n.parent.GetGpuInstanceById(giID)
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("GPU instance %d: %w", giID, nvmlError(ret))
	}
	giInfo, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("GPU instance %d info: %w", giID, nvmlError(ret))
	}
	gp, ok := n.giByID[giInfo.ProfileId]
	if !ok {
		return "", fmt.Errorf("GPU instance %d: profile id %d is in no GPU instance profile", giID, giInfo.ProfileId)
	}
	ci, ret := gi.GetComputeInstanceById(ciID)
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("compute instance %d: %w", ciID, nvmlError(ret))
	}
	ciInfo, ret := ci.GetInfo()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("compute instance %d info: %w", ciID, nvmlError(ret))
	}
	slices, err := n.ciProfileSlices(gi, giInfo.ProfileId, ciInfo.ProfileId)
	if err != nil {
		return "", err
	}
	if gp.name != "" {
		return migCIPrefix(gp.slices, slices) + gp.name, nil
	}
	return MIGProfileName(gp.slices, slices, gp.memMB, n.total, migProfileSuffix(gp.index)), nil
}

// load reads the GPU's memory size and GPU instance profile table once.
func (n *migNamer) load() error {
	if n.giByID != nil {
		return nil
	}
	mem, ret := n.parent.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("memory info: %w", nvmlError(ret))
	}
	n.total = mem.Total
	n.giByID = map[uint32]giProfile{}
	n.ciSlices = map[[2]uint32]uint32{}
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		if n.named {
			// nvmlDeviceGetGpuInstanceProfileInfoV (v2) adds NVML's name.
			if v2, ret := n.parent.GetGpuInstanceProfileInfoV(p).V2(); ret == nvml.SUCCESS {
				n.add(v2.Id, giProfile{index: p, name: nvmlProfileName(v2.Name[:]), slices: v2.SliceCount, memMB: v2.MemorySizeMB})
				continue
			}
		}
		info, ret := n.parent.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS {
			continue // NOT_SUPPORTED: this GPU has no such profile
		}
		n.add(info.Id, giProfile{index: p, slices: info.SliceCount, memMB: info.MemorySizeMB})
	}
	return nil
}

func (n *migNamer) add(id uint32, p giProfile) {
	if _, dup := n.giByID[id]; !dup {
		n.giByID[id] = p
	}
}

// ciProfileSlices is the slice count of compute instance profile ciProfID
// of a GPU instance with profile giProfID.
func (n *migNamer) ciProfileSlices(gi nvml.GpuInstance, giProfID, ciProfID uint32) (uint32, error) {
	key := [2]uint32{giProfID, ciProfID}
	if s, ok := n.ciSlices[key]; ok {
		return s, nil
	}
	for p := 0; p < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; p++ {
		for e := 0; e < nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT; e++ {
			info, ret := gi.GetComputeInstanceProfileInfo(p, e)
			if ret != nvml.SUCCESS {
				continue
			}
			n.ciSlices[[2]uint32{giProfID, info.Id}] = info.SliceCount
		}
	}
	if s, ok := n.ciSlices[key]; ok {
		return s, nil
	}
	return 0, fmt.Errorf("compute instance profile id %d is in no compute instance profile", ciProfID)
}
