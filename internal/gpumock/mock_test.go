package gpumock

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

func openMock(t *testing.T, model string) *nvmlgpu.NVML {
	t.Helper()
	b, err := Open(model, host.NewRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestMockDevicesFollowShape(t *testing.T) {
	for _, model := range Models {
		t.Run(model, func(t *testing.T) {
			b := openMock(t, model)
			if b.Name() != "mock:"+model {
				t.Errorf("Name() = %q", b.Name())
			}
			shape, _ := mockShape(model)
			devs, err := b.Devices()
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != len(shape.GPUs) {
				t.Fatalf("%d devices, shape has %d", len(devs), len(shape.GPUs))
			}
			for i, d := range devs {
				g := shape.GPUs[i]
				if d.Index != i || d.BusID != g.BusID || d.Minor != g.Minor || d.UUID != g.UUID || d.Name != g.Name {
					t.Errorf("GPU %d: %+v, shape %+v", i, d, g)
				}
				if len(d.NVLinks) != len(devs) || d.NVLinks[i] != -1 {
					t.Errorf("GPU %d: NVLinks %v", i, d.NVLinks)
				}
				if d.MIG.Current != g.MIG || len(d.MIG.Devices) != len(g.MIGDevices) {
					t.Errorf("GPU %d: MIG %+v, shape MIG %v %d devices", i, d.MIG, g.MIG, len(g.MIGDevices))
				}
				for k, m := range d.MIG.Devices {
					s := g.MIGDevices[k]
					if m.Profile != s.Profile || m.GI != s.GI || m.CI != s.CI || m.GICapMinor != s.GICapMinor || m.CICapMinor != s.CICapMinor ||
						!strings.HasPrefix(m.UUID, "MIG-") {
						t.Errorf("GPU %d MIG %d: %+v, shape %+v", i, k, m, s)
					}
				}
			}
		})
	}
}

func TestMockDGXH100NVLinks(t *testing.T) {
	devs, err := openMock(t, "dgxh100").Devices()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range devs {
		for j, n := range d.NVLinks {
			want := 18
			if i == j {
				want = -1
			}
			if n != want {
				t.Errorf("NVLinks[%d][%d] = %d, want %d", i, j, n, want)
			}
		}
	}
}

// Every GPU instance profile of every mock, created through the mock's own
// API, gets the name nvidia-smi gives it.
func TestMockMIGProfileNames(t *testing.T) {
	want := map[string][]string{
		"dgxa100": {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.5gb+me", "1g.10gb"},
		"dgxh100": {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me", "1g.20gb"},
		"dgxh200": {"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", "1g.18gb+me", "1g.35gb"},
		"dgxb200": {"1g.23gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb", "1g.23gb+me", "1g.45gb"},
	}
	profiles := []int{
		nvml.GPU_INSTANCE_PROFILE_1_SLICE, nvml.GPU_INSTANCE_PROFILE_2_SLICE, nvml.GPU_INSTANCE_PROFILE_3_SLICE,
		nvml.GPU_INSTANCE_PROFILE_4_SLICE, nvml.GPU_INSTANCE_PROFILE_7_SLICE, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1,
		nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2,
	}
	for model, names := range want {
		t.Run(model, func(t *testing.T) {
			b := openMock(t, model)
			d := b.Interface().(*server.Server).Devices[1].(*server.Device)
			if ret, _ := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
				t.Fatal(ret)
			}
			for gi, p := range profiles {
				d.GpuInstanceCounter = uint32(gi)
				info, ret := d.GetGpuInstanceProfileInfo(p)
				if ret != nvml.SUCCESS {
					t.Fatalf("profile %d: %v", p, ret)
				}
				g, ret := d.CreateGpuInstance(&info)
				if ret != nvml.SUCCESS {
					t.Fatal(ret)
				}
				ci, ret := g.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
				if ret != nvml.SUCCESS {
					t.Fatal(ret)
				}
				if _, ret := g.CreateComputeInstance(&ci); ret != nvml.SUCCESS {
					t.Fatal(ret)
				}
			}
			devs, err := b.Devices()
			if err != nil {
				t.Fatal(err)
			}
			got := devs[1].MIG.Devices
			if len(got) != len(names) {
				t.Fatalf("%d MIG devices: %+v", len(got), got)
			}
			for gi, m := range got {
				name := names[gi]
				if m.GI != gi {
					t.Errorf("device %d has GI %d", gi, m.GI)
				}
				// The compute instance is one slice: a multi-slice GI names it "1c.".
				if !strings.HasPrefix(name, "1g.") {
					name = "1c." + name
				}
				if m.Profile != name {
					t.Errorf("GI %d (profile %d): %q, want %q", gi, profiles[gi], m.Profile, name)
				}
			}
		})
	}
}

func TestMockSettersReadBack(t *testing.T) {
	b := openMock(t, "dgxh100")
	before, err := b.Settings(3, gpu.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if !before.Persistence || before.ComputeMode != gpu.ComputeDefault || before.PowerLimitMW != before.DefaultPowerMW || !before.ECCEnabled || len(before.Unsupported) != 0 {
		t.Errorf("initial settings %+v", before)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.SetPersistence(3, false))
	must(b.SetComputeMode(3, gpu.ComputeExclusiveProcess))
	must(b.SetApplicationClocks(3, before.AppClockMemMHz, 1410))
	must(b.SetPowerLimit(3, 500000))
	must(b.SetLockedClocks(3, 1200, 1800))
	after, err := b.Settings(3, gpu.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if after.Persistence || after.ComputeMode != gpu.ComputeExclusiveProcess || after.AppClockSMMHz != 1410 || after.PowerLimitMW != 500000 || after.DefaultPowerMW != before.DefaultPowerMW {
		t.Errorf("after setters: %+v", after)
	}
	// Other GPUs are untouched.
	if other, _ := b.Settings(2, gpu.AllFields); other.Persistence != before.Persistence || other.PowerLimitMW != before.PowerLimitMW {
		t.Errorf("GPU 2 changed: %+v", other)
	}
	must(b.ResetApplicationClocks(3))
	must(b.ResetLockedClocks(3))
	must(b.SetPersistence(3, true))
	must(b.SetComputeMode(3, gpu.ComputeDefault))
	must(b.SetPowerLimit(3, before.DefaultPowerMW))
	if restored, _ := b.Settings(3, gpu.AllFields); restored.AppClockSMMHz != before.AppClockSMMHz || !restored.Persistence || restored.PowerLimitMW != before.PowerLimitMW {
		t.Errorf("after reset: %+v, want %+v", restored, before)
	}
}

func TestMockSetterErrors(t *testing.T) {
	b := openMock(t, "dgxh100")
	err := b.SetPowerLimit(2, 5000000)
	if err == nil || !errors.Is(err, nvml.ERROR_INVALID_ARGUMENT) {
		t.Fatalf("out-of-range power limit: %v", err)
	}
	// The error names the GPU by index and bus id, and NVML's error.
	for _, s := range []string{"GPU 2", "0000:3a:00.0", "set power limit 5000000 mW", "INVALID_ARGUMENT"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if err := b.SetComputeMode(0, "bogus"); err == nil {
		t.Error("bogus compute mode accepted")
	}
	if err := b.SetApplicationClocks(0, 1, 1410); !errors.Is(err, nvml.ERROR_INVALID_ARGUMENT) {
		t.Errorf("wrong memory clock: %v", err)
	}
	if _, err := b.Settings(99, gpu.AllFields); err == nil {
		t.Error("Settings(99) worked")
	}
	// NOT_SUPPORTED matches ErrUnsupported.
	d := b.Interface().(*server.Server).Devices[0].(*server.Device)
	d.SetPersistenceModeFunc = func(nvml.EnableState) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	if err := b.SetPersistence(0, true); !errors.Is(err, gpu.ErrUnsupported) || !errors.Is(err, nvml.ERROR_NOT_SUPPORTED) {
		t.Errorf("unsupported setter: %v", err)
	}
}

func TestMockHealthAndUnsupported(t *testing.T) {
	b := openMock(t, "dgxa100")
	h, err := b.Health(0)
	if err != nil {
		t.Fatal(err)
	}
	if h.ECCVolatileUncorrected != 0 || h.RemappedRowsPending || h.RemappingFailed {
		t.Errorf("health %+v", h)
	}
	if strings.Join(h.Unsupported, ",") != "retired_pages,retired_pages_pending" {
		t.Errorf("unsupported %v", h.Unsupported)
	}
	// Inject: an uncorrected error and a pending remap on GPU 0.
	d := b.Interface().(*server.Server).Devices[0].(*server.Device)
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 2, nvml.SUCCESS }
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 1, true, false, nvml.SUCCESS }
	d.GetApplicationsClockFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	if h, _ := b.Health(0); h.ECCVolatileUncorrected != 2 || !h.RemappedRowsPending {
		t.Errorf("injected health %+v", h)
	}
	s, err := b.Settings(0, gpu.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Unsupported, ",") != "app_clock_sm_mhz,app_clock_mem_mhz" || !s.Persistence {
		t.Errorf("settings with unsupported clocks: %+v", s)
	}
	// Any other NVML failure is an error naming the GPU.
	d.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	if _, err := b.Settings(0, gpu.AllFields); err == nil || !strings.Contains(err.Error(), "GPU 0 (0000:07:00.0): power limit") {
		t.Errorf("lost GPU: %v", err)
	}
}

func TestMockUnknownModel(t *testing.T) {
	_, err := Open("dgx1", host.NewRoot("/"))
	if err == nil || !strings.Contains(err.Error(), "dgxh100") {
		t.Errorf("unknown mock: %v", err)
	}
}
