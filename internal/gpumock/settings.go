package gpumock

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// mockState is one mock GPU's settings and error counters, held in memory:
// the setters change what the getters read, and refuse what NVML refuses
// (a clock or power limit out of range: INVALID_ARGUMENT). It starts as a
// freshly booted data-centre GPU: persistence on, compute mode default,
// default application clocks, no locked clocks, default power limit, ECC on,
// no errors, accounting off (accounting.go).
type mockState struct {
	mu sync.Mutex
	m  mockModel

	persistence          nvml.EnableState
	compute              nvml.ComputeMode
	appSM, appMem        uint32
	lockedMin, lockedMax uint32 // 0, 0: not locked
	power                uint32
	eccCur, eccPend      nvml.EnableState
	accounting           nvml.EnableState
	file                 string // where settings persist; "" keeps them in memory (mock_persist.go)
}

func newMockState(m mockModel) *mockState {
	return &mockState{
		m:           m,
		persistence: nvml.FEATURE_ENABLED,
		compute:     nvml.COMPUTEMODE_DEFAULT,
		appSM:       m.appSM,
		appMem:      m.appMem,
		power:       m.power,
		eccCur:      nvml.FEATURE_ENABLED,
		eccPend:     nvml.FEATURE_ENABLED,
	}
}

// lock runs f under the state's lock and returns its result.
func (s *mockState) lock(f func() nvml.Return) nvml.Return {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := f()
	if r == nvml.SUCCESS {
		s.saveLocked()
	}
	return r
}

// install sets the device's settings, clock, power, ECC, accounting and
// health funcs.
func (s *mockState) install(d *server.Device) {
	d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.persistence, nvml.SUCCESS
	}
	d.SetPersistenceModeFunc = func(v nvml.EnableState) nvml.Return {
		return s.lock(func() nvml.Return {
			if v != nvml.FEATURE_ENABLED && v != nvml.FEATURE_DISABLED {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			s.persistence = v
			return nvml.SUCCESS
		})
	}
	d.GetComputeModeFunc = func() (nvml.ComputeMode, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.compute, nvml.SUCCESS
	}
	d.SetComputeModeFunc = func(v nvml.ComputeMode) nvml.Return {
		return s.lock(func() nvml.Return {
			if v >= nvml.COMPUTEMODE_COUNT {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			s.compute = v
			return nvml.SUCCESS
		})
	}
	s.installClocks(d)
	s.installPower(d)
	s.installECC(d)
	s.installAccounting(d)
}

// installClocks: application clocks (get, default, set, reset) and locked
// SM clocks (set, reset).
func (s *mockState) installClocks(d *server.Device) {
	clock := func(t nvml.ClockType, sm, mem uint32) (uint32, nvml.Return) {
		switch t {
		case nvml.CLOCK_GRAPHICS, nvml.CLOCK_SM:
			return sm, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return mem, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetApplicationsClockFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return clock(t, s.appSM, s.appMem)
	}
	d.GetDefaultApplicationsClockFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		return clock(t, s.m.appSM, s.m.appMem)
	}
	d.GetMaxClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		return clock(t, s.m.maxSM, s.m.appMem)
	}
	d.SetApplicationsClocksFunc = func(mem, sm uint32) nvml.Return {
		return s.lock(func() nvml.Return {
			if mem != s.m.appMem || sm < s.m.minSM || sm > s.m.maxSM {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			s.appSM, s.appMem = sm, mem
			return nvml.SUCCESS
		})
	}
	d.ResetApplicationsClocksFunc = func() nvml.Return {
		return s.lock(func() nvml.Return {
			s.appSM, s.appMem = s.m.appSM, s.m.appMem
			return nvml.SUCCESS
		})
	}
	d.SetGpuLockedClocksFunc = func(lo, hi uint32) nvml.Return {
		return s.lock(func() nvml.Return {
			if lo > hi || lo < s.m.minSM || hi > s.m.maxSM {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			s.lockedMin, s.lockedMax = lo, hi
			return nvml.SUCCESS
		})
	}
	d.ResetGpuLockedClocksFunc = func() nvml.Return {
		return s.lock(func() nvml.Return {
			s.lockedMin, s.lockedMax = 0, 0
			return nvml.SUCCESS
		})
	}
}

// installPower: power limit (get, default, constraints, set).
func (s *mockState) installPower(d *server.Device) {
	d.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.power, nvml.SUCCESS
	}
	d.GetEnforcedPowerLimitFunc = d.GetPowerManagementLimitFunc
	d.GetPowerManagementDefaultLimitFunc = func() (uint32, nvml.Return) { return s.m.power, nvml.SUCCESS }
	d.GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, nvml.Return) {
		return s.m.minPower, s.m.maxPower, nvml.SUCCESS
	}
	d.SetPowerManagementLimitFunc = func(mw uint32) nvml.Return {
		return s.lock(func() nvml.Return {
			if mw < s.m.minPower || mw > s.m.maxPower {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			s.power = mw
			return nvml.SUCCESS
		})
	}
}

// installECC: ECC mode (get; set changes the pending mode, as on a real GPU
// until its next reset) and error counters: no ECC errors, no row remapping
// pending or failed, and page retirement NOT_SUPPORTED (these generations
// remap rows instead).
func (s *mockState) installECC(d *server.Device) {
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.eccCur, s.eccPend, nvml.SUCCESS
	}
	d.SetEccModeFunc = func(v nvml.EnableState) nvml.Return {
		return s.lock(func() nvml.Return {
			s.eccPend = v
			return nvml.SUCCESS
		})
	}
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return 0, nvml.SUCCESS
	}
	d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		return 0, 0, false, false, nvml.SUCCESS
	}
}
