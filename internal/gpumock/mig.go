package gpumock

import (
	"crypto/sha1"
	"fmt"
	"sort"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/internal/nodeshape"
)

// mockMaxMIGDevices is nvmlDeviceGetMaxMigDeviceCount on every MIG GPU
// the mocks model (A100, H100, H200, B200: seven 1-slice instances).
const mockMaxMIGDevices = 7

// completeMIG adds the MIG calls the mock server leaves nil
// (GetGpuInstanceById, GpuInstance.GetComputeInstanceById,
// GetMaxMigDeviceCount, GetMigDeviceHandleByIndex) and, for a shape GPU in
// MIG mode, turns MIG on and creates its GPU and compute instances through
// the mock's own CreateGpuInstance/CreateComputeInstance, so their profile
// info is the mock's. The GPU instance ids are the shape's; each compute
// instance spans its GPU instance. Every later change of the MIG mode or
// instances is saved through store.
func completeMIG(d *server.Device, g nodeshape.GPU, store *migStore) error {
	origMode := d.SetMigModeFunc
	d.SetMigModeFunc = func(mode int) (nvml.Return, nvml.Return) {
		a, ret := origMode(mode)
		if ret == nvml.SUCCESS {
			store.changed()
		}
		return a, ret
	}
	orig := d.CreateGpuInstanceFunc
	d.CreateGpuInstanceFunc = func(info *nvml.GpuInstanceProfileInfo) (nvml.GpuInstance, nvml.Return) {
		gi, ret := orig(info)
		if ret == nvml.SUCCESS {
			completeGI(gi.(*server.GpuInstance), store)
			store.changed()
		}
		return gi, ret
	}
	origPlaced := d.CreateGpuInstanceWithPlacementFunc
	d.CreateGpuInstanceWithPlacementFunc = func(info *nvml.GpuInstanceProfileInfo, p *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
		gi, ret := origPlaced(info, p)
		if ret == nvml.SUCCESS {
			completeGI(gi.(*server.GpuInstance), store)
			store.changed()
		}
		return gi, ret
	}
	d.GetGpuInstanceByIdFunc = func(id int) (nvml.GpuInstance, nvml.Return) {
		d.RLock()
		defer d.RUnlock()
		for gi := range d.GpuInstances {
			if int(gi.Info.Id) == id {
				return gi, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return mockMaxMIGDevices, nvml.SUCCESS }
	handles := &migHandles{parent: d, byCI: map[*server.ComputeInstance]*mock.Device{}}
	d.GetMigDeviceHandleByIndexFunc = handles.byIndex

	if !g.MIG {
		return nil
	}
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	for _, m := range g.MIGDevices {
		if err := createMIGDevice(d, m); err != nil {
			return fmt.Errorf("MIG %s GI %d CI %d: %w", m.Profile, m.GI, m.CI, err)
		}
	}
	return nil
}

// createMIGDevice creates one GPU instance with id m.GI and profile
// m.GIProfile, and in it one compute instance with id m.CI spanning it.
func createMIGDevice(d *server.Device, m nodeshape.MIGDevice) error {
	info, ret := d.GetGpuInstanceProfileInfo(m.GIProfile)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("GPU instance profile %d: %w", m.GIProfile, ret)
	}
	d.GpuInstanceCounter = uint32(m.GI)
	gi, ret := d.CreateGpuInstance(&info)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("create GPU instance: %w", ret)
	}
	for p := 0; p < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; p++ {
		ci, ret := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || ci.SliceCount != info.SliceCount {
			continue
		}
		gi.(*server.GpuInstance).ComputeInstanceCounter = uint32(m.CI)
		if _, ret := gi.CreateComputeInstance(&ci); ret != nvml.SUCCESS {
			return fmt.Errorf("create compute instance: %w", ret)
		}
		return nil
	}
	return fmt.Errorf("no compute instance profile spans a %d-slice GPU instance", info.SliceCount)
}

// completeGI adds GetComputeInstanceById to a mock GPU instance, and saves
// through store when it or one of its compute instances is created or
// destroyed.
func completeGI(gi *server.GpuInstance, store *migStore) {
	origDestroy := gi.DestroyFunc
	gi.DestroyFunc = func() nvml.Return {
		ret := origDestroy()
		if ret == nvml.SUCCESS {
			store.changed()
		}
		return ret
	}
	origCreate := gi.CreateComputeInstanceFunc
	gi.CreateComputeInstanceFunc = func(info *nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
		ci, ret := origCreate(info)
		if ret != nvml.SUCCESS {
			return ci, ret
		}
		c := ci.(*server.ComputeInstance)
		origCIDestroy := c.DestroyFunc
		c.DestroyFunc = func() nvml.Return {
			ret := origCIDestroy()
			if ret == nvml.SUCCESS {
				store.changed()
			}
			return ret
		}
		store.changed()
		return ci, ret
	}
	gi.GetComputeInstanceByIdFunc = func(id int) (nvml.ComputeInstance, nvml.Return) {
		gi.RLock()
		defer gi.RUnlock()
		for ci := range gi.ComputeInstances {
			if int(ci.Info.Id) == id {
				return ci, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
}

// migHandles hands out MIG device handles for a mock GPU: one per compute
// instance that exists now, in GI then CI id order, each handle kept for the
// life of its compute instance.
type migHandles struct {
	parent *server.Device
	mu     sync.Mutex
	byCI   map[*server.ComputeInstance]*mock.Device
}

type migRef struct {
	gi, ci uint32
	c      *server.ComputeInstance
}

func (h *migHandles) byIndex(k int) (nvml.Device, nvml.Return) {
	if k < 0 || k >= mockMaxMIGDevices {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	var refs []migRef
	h.parent.RLock()
	for gi := range h.parent.GpuInstances {
		gi.RLock()
		for ci := range gi.ComputeInstances {
			refs = append(refs, migRef{gi.Info.Id, ci.Info.Id, ci})
		}
		gi.RUnlock()
	}
	h.parent.RUnlock()
	sort.Slice(refs, func(a, b int) bool {
		if refs[a].gi != refs[b].gi {
			return refs[a].gi < refs[b].gi
		}
		return refs[a].ci < refs[b].ci
	})
	if k >= len(refs) {
		return nil, nvml.ERROR_NOT_FOUND
	}
	r := refs[k]
	h.mu.Lock()
	defer h.mu.Unlock()
	if md, ok := h.byCI[r.c]; ok {
		return md, nvml.SUCCESS
	}
	md := newMIGHandle(h.parent, int(r.gi), int(r.ci))
	h.byCI[r.c] = md
	return md, nvml.SUCCESS
}

// newMIGHandle is a MIG device handle answering the calls gpuprep makes of
// one: its GPU/compute instance ids, UUID, parent and name.
func newMIGHandle(parent *server.Device, gi, ci int) *mock.Device {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/gi%d/ci%d", parent.UUID, gi, ci)))
	uuid := fmt.Sprintf("MIG-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	return &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
		GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		IsMigDeviceHandleFunc:    func() (bool, nvml.Return) { return true, nvml.SUCCESS },
		GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) {
			return parent, nvml.SUCCESS
		},
		GetNameFunc: func() (string, nvml.Return) { return parent.Config.Name + " MIG", nvml.SUCCESS },
	}
}
