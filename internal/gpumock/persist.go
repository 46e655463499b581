package gpumock

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// mockSaved is a mock GPU's settings as kept on disk. A real GPU keeps its
// settings between processes; so that a prolog and the epilog after it (two
// processes) see the same simulated GPU, a mock opened on a fixture root
// keeps each GPU's settings in <root>/run/gpuprep-mock/<uuid>.json.
type mockSaved struct {
	Persistence int    `json:"persistence"`
	Compute     int    `json:"compute_mode"`
	AppSM       uint32 `json:"app_sm_mhz"`
	AppMem      uint32 `json:"app_mem_mhz"`
	LockedMin   uint32 `json:"locked_min_mhz"`
	LockedMax   uint32 `json:"locked_max_mhz"`
	Power       uint32 `json:"power_mw"`
	ECCPending  int    `json:"ecc_pending"`
	Accounting  int    `json:"accounting"`
}

// attach makes the state persistent in file, loading what an earlier
// process saved there.
func (s *mockState) attach(file string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file = file
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	var v mockSaved
	if json.Unmarshal(b, &v) != nil {
		return
	}
	s.persistence, s.compute = nvml.EnableState(v.Persistence), nvml.ComputeMode(v.Compute)
	s.appSM, s.appMem, s.lockedMin, s.lockedMax, s.power = v.AppSM, v.AppMem, v.LockedMin, v.LockedMax, v.Power
	s.eccPend, s.accounting = nvml.EnableState(v.ECCPending), nvml.EnableState(v.Accounting)
}

// saveLocked writes the state atomically; the caller holds s.mu.
func (s *mockState) saveLocked() {
	if s.file == "" {
		return
	}
	b, _ := json.Marshal(mockSaved{Persistence: int(s.persistence), Compute: int(s.compute), AppSM: s.appSM, AppMem: s.appMem,
		LockedMin: s.lockedMin, LockedMax: s.lockedMax, Power: s.power, ECCPending: int(s.eccPend), Accounting: int(s.accounting)})
	if err := os.MkdirAll(filepath.Dir(s.file), 0o755); err != nil {
		return
	}
	tmp := s.file + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, s.file)
	}
}
