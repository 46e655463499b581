package gpumock

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// migStore keeps a mock GPU's MIG mode and instances on disk, as
// <root>/run/gpuprep-mock/<uuid>.mig.json, so that a MIG layout one process
// (a prolog reconfiguring MIG) creates is what the next one reads, as on a
// real GPU. A nil or file-less store keeps them in memory only.
type migStore struct {
	d       *server.Device
	file    string
	loading bool
}

// savedMIG is the on-disk form: the mode and, per compute instance, its
// GPU instance id and profile id and its own id and profile id.
type savedMIG struct {
	Mode    int          `json:"mode"`
	Devices []savedMIGCI `json:"devices"`
}

type savedMIGCI struct {
	GI        uint32 `json:"gi"`
	GIProfile uint32 `json:"gi_profile_id"`
	CI        uint32 `json:"ci"`
	CIProfile uint32 `json:"ci_profile_id"`
}

// changed saves the device's MIG state after a change.
func (m *migStore) changed() {
	if m == nil || m.file == "" || m.loading {
		return
	}
	var v savedMIG
	m.d.RLock()
	v.Mode = m.d.MigMode
	for gi := range m.d.GpuInstances {
		gi.RLock()
		for ci := range gi.ComputeInstances {
			v.Devices = append(v.Devices, savedMIGCI{gi.Info.Id, gi.Info.ProfileId, ci.Info.Id, ci.Info.ProfileId})
		}
		gi.RUnlock()
	}
	m.d.RUnlock()
	sort.Slice(v.Devices, func(a, b int) bool {
		x, y := v.Devices[a], v.Devices[b]
		return x.GI < y.GI || (x.GI == y.GI && x.CI < y.CI)
	})
	b, _ := json.Marshal(v)
	if os.MkdirAll(filepath.Dir(m.file), 0o755) != nil {
		return
	}
	tmp := m.file + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, m.file)
	}
}

// attach makes the store persistent in file and, when an earlier process
// saved a layout there, replaces the shape's layout with it.
func (m *migStore) attach(file string) error {
	m.file = file
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var v savedMIG
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	m.loading = true
	defer func() { m.loading = false }()
	m.d.Lock()
	m.d.GpuInstances = map[*server.GpuInstance]struct{}{}
	m.d.MigMode = v.Mode
	m.d.Unlock()
	for _, s := range v.Devices {
		if err := m.restore(s); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// restore creates one saved GPU instance (once) and compute instance with
// their saved ids and profiles.
func (m *migStore) restore(s savedMIGCI) error {
	var gi nvml.GpuInstance
	m.d.RLock()
	for g := range m.d.GpuInstances {
		if g.Info.Id == s.GI {
			gi = g
		}
	}
	m.d.RUnlock()
	if gi == nil {
		info, ok := giProfileByID(m.d, s.GIProfile)
		if !ok {
			return fmt.Errorf("no GPU instance profile id %d", s.GIProfile)
		}
		m.d.GpuInstanceCounter = s.GI
		var ret nvml.Return
		if gi, ret = m.d.CreateGpuInstance(&info); ret != nvml.SUCCESS {
			return fmt.Errorf("create GPU instance %d: %w", s.GI, ret)
		}
	}
	for p := 0; p < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; p++ {
		ci, ret := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || ci.Id != s.CIProfile {
			continue
		}
		gi.(*server.GpuInstance).ComputeInstanceCounter = s.CI
		if _, ret := gi.CreateComputeInstance(&ci); ret != nvml.SUCCESS {
			return fmt.Errorf("create compute instance %d: %w", s.CI, ret)
		}
		return nil
	}
	return fmt.Errorf("GPU instance %d: no compute instance profile id %d", s.GI, s.CIProfile)
}

// giProfileByID is the GPU instance profile whose id is id.
func giProfileByID(d *server.Device, id uint32) (nvml.GpuInstanceProfileInfo, bool) {
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		if info, ret := d.GetGpuInstanceProfileInfo(p); ret == nvml.SUCCESS && info.Id == id {
			return info, true
		}
	}
	return nvml.GpuInstanceProfileInfo{}, false
}
