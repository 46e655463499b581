package gpumock

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

// countersOf reads GPU i's counters through the backend (nvmlgpu's
// Counters over the mock's field values).
func countersOf(t *testing.T, b *nvmlgpu.NVML, i int) gpu.Counters {
	t.Helper()
	r, ok := gpu.As[gpu.CountersReader](b)
	if !ok {
		t.Fatal("the mock backend reads no counters")
	}
	cs, err := r.Counters(i)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// healthy is a healthy GPU's counters, with energy e.
func healthy(e uint64) gpu.Counters {
	cs := gpu.Counters{Values: map[gpu.Counter]uint64{}}
	for _, c := range gpu.AllCounters {
		cs.Values[c] = 0
	}
	cs.Values[gpu.EnergyMJ] = e
	return cs
}

// openCounters opens mock model on a fresh fixture root.
func openCounters(t *testing.T, model string) (*nvmlgpu.NVML, host.Root, gpu.Device) {
	t.Helper()
	root := host.NewRoot(t.TempDir())
	b, err := Open(model, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	return b, root, devs[0]
}

// A mock GPU reads a healthy GPU's counters: energy 1,000,000,000 mJ,
// every other counter 0 (NVLink's too on an NVLink GPU), none missing.
func TestMockCountersDefaults(t *testing.T) {
	for _, model := range Models {
		b, _, dev := openCounters(t, model)
		if got := countersOf(t, b, dev.Index); !reflect.DeepEqual(got, healthy(DefaultEnergyMJ)) {
			t.Errorf("%s: %v, want %v", model, got, healthy(DefaultEnergyMJ))
		}
	}
}

// A mock on a fixture root reads the counters file at each read: a test
// rewriting it between two reads (a prolog's and an epilog's) moves the
// counters, for this process and a later one.
func TestMockCountersFileMoves(t *testing.T) {
	b, root, dev := openCounters(t, "dgxh100")
	before := countersOf(t, b, dev.Index)
	if err := WriteCounters(root, dev.UUID, Counters{Values: map[gpu.Counter]uint64{
		gpu.EnergyMJ: 1_500_000_000, gpu.ECCCorrected: 3, gpu.RemappedCorrect: 2, gpu.PowerCapNs: 7e9}}); err != nil {
		t.Fatal(err)
	}
	want := healthy(1_500_000_000)
	want.Values[gpu.ECCCorrected], want.Values[gpu.RemappedCorrect], want.Values[gpu.PowerCapNs] = 3, 2, 7e9
	after := countersOf(t, b, dev.Index)
	if before.Values[gpu.EnergyMJ] != DefaultEnergyMJ || !reflect.DeepEqual(after, want) {
		t.Errorf("before %v, after %v, want %v", before, after, want)
	}
	later, err := Open("dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if got := countersOf(t, later, dev.Index); !reflect.DeepEqual(got, want) {
		t.Errorf("another mock on the root: %v, want %v", got, want)
	}
	if fi, err := os.Stat(CountersFile(root, dev.UUID)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("counters file: %v %v, want mode 0644", fi, err)
	}
	if got := countersOf(t, b, dev.Index+1); !reflect.DeepEqual(got, healthy(DefaultEnergyMJ)) {
		t.Errorf("the next GPU moved: %v", got)
	}
}

// Counters made NOT_SUPPORTED are missing, in gpu.AllCounters order, with
// no value; an unsupported energy field stays missing (the energy call is
// NOT_SUPPORTED too). A GPU without NVLinks misses the NVLink counters.
func TestMockCountersUnsupported(t *testing.T) {
	b, root, dev := openCounters(t, "dgxa100")
	if err := WriteCounters(root, dev.UUID, Counters{Unsupported: []gpu.Counter{gpu.PCIeReplays, gpu.EnergyMJ, gpu.HWThermalNs}}); err != nil {
		t.Fatal(err)
	}
	cs := countersOf(t, b, dev.Index)
	want := []gpu.Counter{gpu.EnergyMJ, gpu.HWThermalNs, gpu.PCIeReplays}
	if !reflect.DeepEqual(cs.Missing, want) || len(cs.Values) != len(gpu.AllCounters)-len(want) {
		t.Errorf("%v, want %v missing", cs, want)
	}

	d := mockDevice(b, dev.UUID)
	d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	os.Remove(CountersFile(root, dev.UUID))
	cs = countersOf(t, b, dev.Index)
	want = []gpu.Counter{gpu.NVLinkCRCFlit, gpu.NVLinkCRCData, gpu.NVLinkReplays, gpu.NVLinkRecoveries}
	if !reflect.DeepEqual(cs.Missing, want) || cs.Values[gpu.EnergyMJ] != DefaultEnergyMJ {
		t.Errorf("no NVLinks: %v, want %v missing", cs, want)
	}
}

// A counters file that is garbage reads as the defaults, as the faults
// file does.
func TestMockCountersGarbageFile(t *testing.T) {
	b, root, dev := openCounters(t, "dgxh200")
	if err := WriteCounters(root, dev.UUID, Counters{}); err != nil { // makes the folder
		t.Fatal(err)
	}
	for _, garbage := range []string{"{not json", `{"values": {"energy_mj": "lots"}}`, ""} {
		if err := os.WriteFile(CountersFile(root, dev.UUID), []byte(garbage), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := countersOf(t, b, dev.Index); !reflect.DeepEqual(got, healthy(DefaultEnergyMJ)) {
			t.Errorf("%q: %v, want the defaults", garbage, got)
		}
	}
}

// SetCounters sets the counters in process, over the file; the recovery
// action (SetFaults) reads on, whichever came last.
func TestMockSetCounters(t *testing.T) {
	b, root, dev := openCounters(t, "dgxb200")
	d := mockDevice(b, dev.UUID)
	if err := WriteCounters(root, dev.UUID, Counters{Values: map[gpu.Counter]uint64{gpu.EnergyMJ: 5}}); err != nil {
		t.Fatal(err)
	}
	SetFaults(d, Faults{RecoveryAction: int(gpu.RecoveryGPUReset)})
	SetCounters(d, Counters{Values: map[gpu.Counter]uint64{gpu.SyncBoostNs: 9}, Unsupported: []gpu.Counter{gpu.NVLinkReplays}})
	want := healthy(DefaultEnergyMJ)
	want.Values[gpu.SyncBoostNs] = 9
	delete(want.Values, gpu.NVLinkReplays)
	want.Missing = []gpu.Counter{gpu.NVLinkReplays}
	if got := countersOf(t, b, dev.Index); !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if a, err := b.RecoveryAction(dev.Index); a != gpu.RecoveryGPUReset || err != nil {
		t.Errorf("recovery action under SetCounters: %v %v", a, err)
	}
	SetFaults(d, Faults{RecoveryAction: int(gpu.RecoveryNodeReboot)})
	if a, err := b.RecoveryAction(dev.Index); a != gpu.RecoveryNodeReboot || err != nil {
		t.Errorf("recovery action: %v %v", a, err)
	}
	if got := countersOf(t, b, dev.Index); !reflect.DeepEqual(got, want) {
		t.Errorf("after SetFaults: %v, want %v", got, want)
	}
	if e, ret := d.GetTotalEnergyConsumption(); e != DefaultEnergyMJ || ret != nvml.SUCCESS {
		t.Errorf("total energy %d %v", e, ret)
	}
}

// mockDevice is the mock's device with uuid.
func mockDevice(b *nvmlgpu.NVML, uuid string) *server.Device {
	for _, d := range b.Interface().(*server.Server).Devices {
		if d := d.(*server.Device); d.UUID == uuid {
			return d
		}
	}
	panic("no GPU " + uuid)
}

func TestCountersRunAtTheirRates(t *testing.T) {
	c := Counters{Rates: map[gpu.Counter]float64{gpu.EnergyMJ: 700_000, gpu.PowerCapNs: 0.34e9}, Since: time.Now().Add(-10 * time.Second)}
	e, ret := c.value(gpu.EnergyMJ, false)
	if ret != nvml.SUCCESS || e < DefaultEnergyMJ+7_000_000 || e > DefaultEnergyMJ+7_100_000 {
		t.Errorf("energy 10 s at 700 W: %d mJ over the default, want about 7,000,000", e-DefaultEnergyMJ)
	}
	if p, _ := c.value(gpu.PowerCapNs, false); p < 3.4e9 || p > 3.45e9 {
		t.Errorf("power cap 34%% of 10 s: %d ns, want about 3.4e9", p)
	}
}
