package nvmlgpu

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gpuprep/lib/gpu"
)

// field is what the mock driver answers for one field id.
type field struct {
	ret nvml.Return
	typ nvml.ValueType
	raw uint64 // the union's 8 bytes, in native order
}

// countersDevice is a mock GPU answering each field as fields says (a field
// not there: NOT_SUPPORTED) and nvmlDeviceGetTotalEnergyConsumption as
// energy and energyRet say.
func countersDevice(fields map[uint32]field, energy uint64, energyRet nvml.Return) *mock.Device {
	return &mock.Device{
		GetFieldValuesFunc: func(vs []nvml.FieldValue) nvml.Return {
			for i := range vs {
				f, ok := fields[vs[i].FieldId]
				if !ok {
					f.ret = nvml.ERROR_NOT_SUPPORTED
				}
				vs[i].NvmlReturn, vs[i].ValueType = uint32(f.ret), uint32(f.typ)
				binary.NativeEndian.PutUint64(vs[i].Value[:], f.raw)
			}
			return nvml.SUCCESS
		},
		GetTotalEnergyConsumptionFunc: func() (uint64, nvml.Return) { return energy, energyRet },
		GetPciInfoFunc:                func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST },
	}
}

// allFields answers every counter's field as an unsigned long long 7.
func allFields() map[uint32]field {
	fs := map[uint32]field{}
	for _, c := range gpu.AllCounters {
		fs[counterFields[c]] = field{nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 7}
	}
	return fs
}

// Every counter is read in one nvmlDeviceGetFieldValues call, by its own
// field id; a GPU answering every field gives every counter, none missing,
// and no energy fallback call.
func TestCountersOneCall(t *testing.T) {
	dev := countersDevice(allFields(), 99, nvml.SUCCESS)
	b := &NVML{handles: map[int]nvml.Device{2: dev}}
	cs, err := b.Counters(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Values) != len(gpu.AllCounters) || cs.Missing != nil {
		t.Errorf("got %v, want all %d counters at 7", cs, len(gpu.AllCounters))
	}
	for c, v := range cs.Values {
		if v != 7 {
			t.Errorf("%s = %d, want 7", c, v)
		}
	}
	calls := dev.GetFieldValuesCalls()
	if len(calls) != 1 || len(calls[0].FieldValues) != len(gpu.AllCounters) {
		t.Fatalf("%d field-values calls, want 1 for all %d counters", len(calls), len(gpu.AllCounters))
	}
	for i, c := range gpu.AllCounters {
		if id, _ := CounterField(c); calls[0].FieldValues[i].FieldId != id {
			t.Errorf("field %d asked for %s, want %d", calls[0].FieldValues[i].FieldId, c, id)
		}
	}
	if n := len(dev.GetTotalEnergyConsumptionCalls()); n != 0 {
		t.Errorf("%d energy calls with the field answered", n)
	}
}

// Each value type NVML may answer reads as the counter's value; a negative
// signed value, a negative or NaN double and an unknown type are missing.
func TestCountersValueTypes(t *testing.T) {
	neg := func(n int64) uint64 { return uint64(n) }
	for _, c := range []struct {
		name string
		f    field
		want uint64
		ok   bool
	}{
		{"double", field{nvml.SUCCESS, nvml.VALUE_TYPE_DOUBLE, math.Float64bits(1234.9)}, 1234, true},
		{"negative double", field{nvml.SUCCESS, nvml.VALUE_TYPE_DOUBLE, math.Float64bits(-1)}, 0, false},
		{"NaN", field{nvml.SUCCESS, nvml.VALUE_TYPE_DOUBLE, math.Float64bits(math.NaN())}, 0, false},
		{"unsigned int", field{nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, 0xdead_0000_0005}, 5, true},
		{"unsigned long", field{nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG, 1 << 40}, 1 << 40, true},
		{"unsigned long long", field{nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, math.MaxUint64}, math.MaxUint64, true},
		{"signed long long", field{nvml.SUCCESS, nvml.VALUE_TYPE_SIGNED_LONG_LONG, 1 << 50}, 1 << 50, true},
		{"negative signed long long", field{nvml.SUCCESS, nvml.VALUE_TYPE_SIGNED_LONG_LONG, neg(-1)}, 0, false},
		{"signed int", field{nvml.SUCCESS, nvml.VALUE_TYPE_SIGNED_INT, 42}, 42, true},
		{"negative signed int", field{nvml.SUCCESS, nvml.VALUE_TYPE_SIGNED_INT, uint64(uint32(0xffff_fffe))}, 0, false},
		{"unsigned short", field{nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_SHORT, 0x1_0003}, 3, true},
		{"unknown type", field{nvml.SUCCESS, nvml.VALUE_TYPE_COUNT, 1}, 0, false},
	} {
		dev := countersDevice(map[uint32]field{nvml.FI_DEV_PCIE_REPLAY_COUNTER: c.f}, 1, nvml.SUCCESS)
		cs, err := (&NVML{handles: map[int]nvml.Device{0: dev}}).Counters(0)
		got, ok := cs.Values[gpu.PCIeReplays]
		missing := slices.Contains(cs.Missing, gpu.PCIeReplays)
		if err != nil || ok != c.ok || got != c.want || missing == c.ok {
			t.Errorf("%s: %d %v (missing %v) %v, want %d %v", c.name, got, ok, missing, err, c.want, c.ok)
		}
	}
}

// A field the GPU does not have (NOT_SUPPORTED), or that fails on its own,
// is missing, in gpu.AllCounters order, not read as zero; the rest read.
func TestCountersMissing(t *testing.T) {
	fs := allFields()
	for _, c := range []gpu.Counter{gpu.NVLinkRecoveries, gpu.HWThermalNs, gpu.NVLinkCRCFlit} {
		fs[counterFields[c]] = field{ret: nvml.ERROR_NOT_SUPPORTED}
	}
	fs[counterFields[gpu.RemappedCorrect]] = field{nvml.ERROR_UNKNOWN, nvml.VALUE_TYPE_UNSIGNED_INT, 3}
	cs, err := (&NVML{handles: map[int]nvml.Device{0: countersDevice(fs, 0, nvml.SUCCESS)}}).Counters(0)
	want := []gpu.Counter{gpu.HWThermalNs, gpu.RemappedCorrect, gpu.NVLinkCRCFlit, gpu.NVLinkRecoveries}
	if err != nil || !reflect.DeepEqual(cs.Missing, want) {
		t.Fatalf("missing %v (%v), want %v", cs.Missing, err, want)
	}
	for _, c := range want {
		if _, ok := cs.Values[c]; ok {
			t.Errorf("%s has a value", c)
		}
	}
	if len(cs.Values) != len(gpu.AllCounters)-len(want) {
		t.Errorf("%d values, want %d", len(cs.Values), len(gpu.AllCounters)-len(want))
	}
}

// An energy field not answered falls back to
// nvmlDeviceGetTotalEnergyConsumption, one call; when that fails too the
// energy is missing.
func TestCountersEnergyFallback(t *testing.T) {
	for _, c := range []struct {
		name    string
		ret     nvml.Return
		want    uint64
		missing bool
	}{{"fallback works", nvml.SUCCESS, 5_000_000, false}, {"fallback fails", nvml.ERROR_NOT_SUPPORTED, 0, true}} {
		fs := allFields()
		fs[nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION] = field{ret: nvml.ERROR_NOT_SUPPORTED}
		dev := countersDevice(fs, c.want, c.ret)
		cs, err := (&NVML{handles: map[int]nvml.Device{0: dev}}).Counters(0)
		got, ok := cs.Values[gpu.EnergyMJ]
		if err != nil || got != c.want || ok == c.missing || slices.Contains(cs.Missing, gpu.EnergyMJ) != c.missing {
			t.Errorf("%s: energy %d %v, missing %v (%v)", c.name, got, ok, cs.Missing, err)
		}
		if n := len(dev.GetTotalEnergyConsumptionCalls()); n != 1 {
			t.Errorf("%s: %d energy calls, want 1", c.name, n)
		}
	}
}

// A failure of the whole call is an error naming the GPU, wrapping NVML's
// return code (NOT_SUPPORTED matching gpu.ErrUnsupported).
func TestCountersCallFails(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_GPU_IS_LOST, nvml.ERROR_NOT_SUPPORTED} {
		dev := countersDevice(allFields(), 1, nvml.SUCCESS)
		dev.GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return ret }
		cs, err := (&NVML{handles: map[int]nvml.Device{3: dev}}).Counters(3)
		if err == nil || !strings.Contains(err.Error(), "nvml: GPU 3 (bus id unknown): counters") || !errors.Is(err, ret) {
			t.Errorf("%v: %v %v, want an error naming GPU 3", ret, cs, err)
		}
		if errors.Is(err, gpu.ErrUnsupported) != (ret == nvml.ERROR_NOT_SUPPORTED) {
			t.Errorf("%v: ErrUnsupported is %v", ret, errors.Is(err, gpu.ErrUnsupported))
		}
	}
}
