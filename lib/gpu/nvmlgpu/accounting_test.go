package nvmlgpu

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gpuprep/lib/gpu"
)

// accountingGPU is a go-nvml mock GPU that keeps an accounting mode and
// the records stats gives, in MIG mode when mig is set.
func accountingGPU(mig bool, stats map[int]nvml.AccountingStats) (*NVML, *nvml.EnableState) {
	mode := nvml.FEATURE_DISABLED
	dev := &mock.Device{
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if mig {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		GetAccountingModeFunc: func() (nvml.EnableState, nvml.Return) { return mode, nvml.SUCCESS },
		SetAccountingModeFunc: func(v nvml.EnableState) nvml.Return {
			if mig {
				return nvml.ERROR_NOT_SUPPORTED
			}
			mode = v
			return nvml.SUCCESS
		},
		GetAccountingPidsFunc: func() ([]int, nvml.Return) {
			if mode != nvml.FEATURE_ENABLED {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			return []int{4242, 77, 9}, nvml.SUCCESS // 9: dropped from the buffer since
		},
		GetAccountingStatsFunc: func(pid uint32) (nvml.AccountingStats, nvml.Return) {
			st, ok := stats[int(pid)]
			if !ok {
				return st, nvml.ERROR_NOT_FOUND
			}
			return st, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return PCIInfoOf("0000:07:00.0", 0), nvml.SUCCESS },
	}
	return &NVML{handles: map[int]nvml.Device{0: dev}}, &mode
}

// Accounting mode: read and set through NVML; the records of
// GetAccountingPids with their stats, units converted, NVML's "not
// available" kept apart from 0, a record gone between the calls left out.
func TestAccounting(t *testing.T) {
	start := time.Date(2026, 3, 4, 16, 20, 9, 123456000, time.UTC)
	b, mode := accountingGPU(false, map[int]nvml.AccountingStats{
		4242: {GpuUtilization: 87, MemoryUtilization: 41, MaxMemoryUsage: 70 << 30, Time: 0,
			StartTime: uint64(start.UnixMicro()), IsRunning: 1},
		77: {GpuUtilization: math.MaxUint32, MemoryUtilization: math.MaxUint32, MaxMemoryUsage: math.MaxUint64,
			Time: 90500, StartTime: uint64(start.Add(-time.Hour).UnixMicro())},
	})
	if on, err := b.AccountingMode(0); on || err != nil {
		t.Fatalf("fresh GPU: %v %v", on, err)
	}
	if _, err := b.AccountingStats(0); !errors.Is(err, gpu.ErrUnsupported) {
		t.Fatalf("stats with accounting off: %v, want unsupported", err)
	}
	if err := b.SetAccountingMode(0, true); err != nil || *mode != nvml.FEATURE_ENABLED {
		t.Fatalf("set on: %v, mode %v", err, *mode)
	}
	if on, err := b.AccountingMode(0); !on || err != nil {
		t.Fatalf("after set: %v %v", on, err)
	}
	got, err := b.AccountingStats(0)
	if err != nil || len(got) != 2 {
		t.Fatalf("stats: %+v %v", got, err)
	}
	want := []gpu.ProcessAccounting{
		{PID: 4242, Start: start, Running: true, GPUUtilPct: 87, MemoryUtilPct: 41, MaxMemoryBytes: 70 << 30},
		{PID: 77, Start: start.Add(-time.Hour), Duration: 90500 * time.Millisecond,
			GPUUtilPct: gpu.NotAvailable, MemoryUtilPct: gpu.NotAvailable},
	}
	for i := range want {
		g := got[i]
		same := g.Start.Equal(want[i].Start)
		g.Start = want[i].Start // the zone aside
		if !same || g != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := b.SetAccountingMode(0, false); err != nil || *mode != nvml.FEATURE_DISABLED {
		t.Fatalf("set off: %v, mode %v", err, *mode)
	}
}

// A GPU in MIG mode: reading or setting the mode is gpu.ErrUnsupported,
// saying MIG, before NVML is asked to change anything.
func TestAccountingMIG(t *testing.T) {
	b, mode := accountingGPU(true, nil)
	_, err := b.AccountingMode(0)
	for _, err := range []error{err, b.SetAccountingMode(0, true)} {
		if !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "MIG mode") ||
			!strings.Contains(err.Error(), "0000:07:00.0") {
			t.Errorf("MIG GPU: %v, want unsupported naming MIG and the GPU", err)
		}
	}
	if *mode != nvml.FEATURE_DISABLED {
		t.Error("the mode changed on a MIG GPU")
	}
}

// Any other failure names the GPU and the call and is not unsupported.
func TestAccountingErrors(t *testing.T) {
	dev := &mock.Device{
		GetMigModeFunc:        func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
		GetAccountingModeFunc: func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST },
		SetAccountingModeFunc: func(nvml.EnableState) nvml.Return { return nvml.ERROR_NO_PERMISSION },
		GetAccountingPidsFunc: func() ([]int, nvml.Return) { return []int{1}, nvml.SUCCESS },
		GetAccountingStatsFunc: func(uint32) (nvml.AccountingStats, nvml.Return) {
			return nvml.AccountingStats{}, nvml.ERROR_UNKNOWN
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST },
	}
	b := &NVML{handles: map[int]nvml.Device{0: dev}}
	_, errMode := b.AccountingMode(0)
	_, errStats := b.AccountingStats(0)
	for what, err := range map[string]error{
		"accounting mode":           errMode,
		"set accounting mode true":  b.SetAccountingMode(0, true),
		"accounting stats of pid 1": errStats,
	} {
		if err == nil || errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "nvml: GPU 0 (bus id unknown): "+what) {
			t.Errorf("%s: %v", what, err)
		}
	}
}
