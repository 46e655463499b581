package gpumock

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// A mock GPU keeps an accounting mode, off as on a booted GPU, saved with
// its other settings (persist.go). The process records NVML would keep
// while it is on are a test's: WriteAccounting puts them in
// <root>/run/gpuprep-mock/<uuid>.accounting.json, which the mock reads at
// each call, and they are answered only while the mode is on. Turning the
// mode off clears them (the file is removed), as NVML does. A GPU in MIG
// mode reads accounting off and refuses to change it (NOT_SUPPORTED), as
// NVML documents; a mock on the host's "/" keeps no records.

// AccountingFile is where a mock on a fixture root reads a GPU's process
// records.
func AccountingFile(root host.Root, uuid string) string {
	return root.Path("/run/gpuprep-mock/" + uuid + ".accounting.json")
}

// WriteAccounting makes procs the process records mock GPU uuid keeps on
// root (what NVML's accounting would have recorded).
func WriteAccounting(root host.Root, uuid string, procs []gpu.ProcessAccounting) error {
	b, err := json.Marshal(procs)
	if err != nil {
		return fmt.Errorf("mock GPU %s: accounting records: %w", uuid, err)
	}
	file := AccountingFile(root, uuid)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("mock GPU %s: accounting records: %w", uuid, err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("mock GPU %s: accounting records: %w", uuid, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("mock GPU %s: accounting records: %w", uuid, err)
	}
	return nil
}

// installAccounting sets the accounting mode's getter and setter and the
// records' (GetAccountingPids, GetAccountingStats).
func (s *mockState) installAccounting(d *server.Device) {
	migOn := func() bool {
		cur, _, ret := d.GetMigMode()
		return ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE
	}
	d.GetAccountingModeFunc = func() (nvml.EnableState, nvml.Return) {
		if migOn() {
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.accounting, nvml.SUCCESS
	}
	d.SetAccountingModeFunc = func(v nvml.EnableState) nvml.Return {
		if migOn() {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return s.lock(func() nvml.Return {
			if v != nvml.FEATURE_ENABLED && v != nvml.FEATURE_DISABLED {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			if v == nvml.FEATURE_DISABLED && s.file != "" {
				os.Remove(accountingFile(s.file))
			}
			s.accounting = v
			return nvml.SUCCESS
		})
	}
	d.GetAccountingPidsFunc = func() ([]int, nvml.Return) {
		procs, ret := s.records(migOn())
		var pids []int
		for _, p := range procs {
			pids = append(pids, p.PID)
		}
		return pids, ret
	}
	d.GetAccountingStatsFunc = func(pid uint32) (nvml.AccountingStats, nvml.Return) {
		procs, ret := s.records(migOn())
		if ret != nvml.SUCCESS {
			return nvml.AccountingStats{}, ret
		}
		for i := len(procs) - 1; i >= 0; i-- { // a reused PID: the latest record
			if procs[i].PID == int(pid) {
				return accountingStats(procs[i]), nvml.SUCCESS
			}
		}
		return nvml.AccountingStats{}, nvml.ERROR_NOT_FOUND
	}
}

// accountingFile is the records' file beside the saved settings' file
// (AccountingFile).
func accountingFile(settings string) string {
	return strings.TrimSuffix(settings, ".json") + ".accounting.json"
}

// records are the GPU's process records: NOT_SUPPORTED while accounting is
// off (or MIG on), none without a records file (or with a garbled one).
func (s *mockState) records(mig bool) ([]gpu.ProcessAccounting, nvml.Return) {
	s.mu.Lock()
	on, file := s.accounting == nvml.FEATURE_ENABLED && !mig, s.file
	s.mu.Unlock()
	if !on {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	if file == "" {
		return nil, nvml.SUCCESS
	}
	var procs []gpu.ProcessAccounting
	if b, err := os.ReadFile(accountingFile(file)); err == nil {
		_ = json.Unmarshal(b, &procs) // a test's file; garbage means no records
	}
	return procs, nvml.SUCCESS
}

// accountingStats is p as NVML reports it (gpu.NotAvailable as
// NVML_VALUE_NOT_AVAILABLE).
func accountingStats(p gpu.ProcessAccounting) nvml.AccountingStats {
	pct := func(v int) uint32 {
		if v == gpu.NotAvailable {
			return math.MaxUint32
		}
		return uint32(v)
	}
	st := nvml.AccountingStats{
		GpuUtilization:    pct(p.GPUUtilPct),
		MemoryUtilization: pct(p.MemoryUtilPct),
		MaxMemoryUsage:    p.MaxMemoryBytes,
		Time:              uint64(p.Duration.Milliseconds()),
		StartTime:         uint64(p.Start.UnixMicro()),
	}
	if p.Running {
		st.IsRunning = 1
	}
	return st
}
