package gpumock

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Accounting mode: off on a fresh GPU, kept across opens on a fixture
// root (the prolog turns it on, the epilog reads and restores it); the
// records a test writes are answered only while it is on, and turning it
// off clears them.
func TestMockAccounting(t *testing.T) {
	root := host.NewRoot(t.TempDir())
	a, err := Open("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	devs, _ := a.Devices()
	uuid := devs[2].UUID
	if on, err := a.AccountingMode(2); on || err != nil {
		t.Fatalf("fresh GPU: %v %v", on, err)
	}
	start := time.Date(2026, 3, 4, 16, 20, 9, 0, time.UTC)
	procs := []gpu.ProcessAccounting{
		{PID: 300, Start: start, Duration: 90 * time.Second, GPUUtilPct: 55, MemoryUtilPct: 20, MaxMemoryBytes: 1 << 30},
		{PID: 301, Start: start.Add(time.Minute), Running: true, GPUUtilPct: gpu.NotAvailable, MemoryUtilPct: 3, MaxMemoryBytes: 2 << 30},
	}
	if err := WriteAccounting(root, uuid, procs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AccountingStats(2); !errors.Is(err, gpu.ErrUnsupported) {
		t.Fatalf("records with accounting off: %v, want unsupported", err)
	}
	if err := a.SetAccountingMode(2, true); err != nil {
		t.Fatal(err)
	}

	b, err := Open("dgxh100", root) // the epilog's process
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if on, err := b.AccountingMode(2); !on || err != nil {
		t.Fatalf("second open: %v %v", on, err)
	}
	if on, _ := b.AccountingMode(1); on {
		t.Fatal("another GPU's accounting turned on")
	}
	got, err := b.AccountingStats(2)
	for i := range got {
		got[i].Start = got[i].Start.UTC()
	}
	if err != nil || !reflect.DeepEqual(got, procs) {
		t.Fatalf("records %+v %v\nwant %+v", got, err, procs)
	}
	if err := b.SetAccountingMode(2, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(AccountingFile(root, uuid)); !os.IsNotExist(err) {
		t.Errorf("records kept after accounting off: %v", err)
	}
	if err := b.SetAccountingMode(2, true); err != nil {
		t.Fatal(err)
	}
	if got, err := b.AccountingStats(2); len(got) != 0 || err != nil {
		t.Errorf("records after off and on again: %+v %v", got, err)
	}
}

// A GPU in MIG mode (the dgxa100 shape's GPU 0) reads accounting off and
// refuses to turn it on; the GPU beside it takes it.
func TestMockAccountingMIG(t *testing.T) {
	b := openMock(t, "dgxa100")
	devs, _ := b.Devices()
	if !devs[0].MIG.Current || devs[1].MIG.Current {
		t.Fatalf("MIG: GPU 0 %v, GPU 1 %v", devs[0].MIG.Current, devs[1].MIG.Current)
	}
	err := b.SetAccountingMode(0, true)
	if !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "MIG") {
		t.Errorf("set on a MIG GPU: %v, want unsupported naming MIG", err)
	}
	// Under the backend's own check, the mock GPU refuses too.
	srv := b.Interface()
	h, _ := srv.DeviceGetHandleByIndex(0)
	if ret := h.SetAccountingMode(nvml.FEATURE_ENABLED); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("the mock MIG GPU answers %v to accounting on", ret)
	}
	if mode, _ := h.GetAccountingMode(); mode != nvml.FEATURE_DISABLED {
		t.Errorf("the mock MIG GPU reads accounting %v", mode)
	}
	if err := b.SetAccountingMode(1, true); err != nil {
		t.Fatalf("GPU 1: %v", err)
	}
	if on, err := b.AccountingMode(1); !on || err != nil {
		t.Fatalf("GPU 1: %v %v", on, err)
	}
}
