package knob

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// mockGPUs opens mock:dgxh100 over the shared (read-only) dgxh100 root. The
// mock keeps the GPUs' settings in <root>/run, so the test gets a root of its
// own whose other top folders are links into the shared copy: settings
// changed here never reach another test, or the next run.
func mockGPUs(t testing.TB) (gpu.Backend, []gpu.Device) {
	t.Helper()
	shared, own := testroot.Shared(t, "dgxh100"), t.TempDir()
	tops, err := os.ReadDir(shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tops {
		if e.Name() != "run" {
			if err := os.Symlink(filepath.Join(shared, e.Name()), filepath.Join(own, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := gpu.Open("mock:dgxh100", host.NewRoot(own))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	devs, err := b.Devices()
	if err != nil || len(devs) != 8 {
		t.Fatalf("devices %d, %v", len(devs), err)
	}
	return b, devs
}

func gpuKnobNamed(t testing.TB, b gpu.Backend, dev gpu.Device, name string) Knob {
	t.Helper()
	for _, k := range GPUKnobs(b, dev) {
		if k.ID().Name == name {
			if k.ID().Scope != GPUScope(dev.UUID) {
				t.Fatalf("scope %q", k.ID().Scope)
			}
			return k
		}
	}
	t.Fatalf("no GPU knob %s", name)
	return nil
}

func TestGPUKnobsRoundTrip(t *testing.T) {
	b, devs := mockGPUs(t)
	d := devs[3]
	for _, tc := range []struct {
		name, setting string
		orig, want    Value
	}{
		{"gpu_persistence", "off", "on", "off"},
		{"gpu_persistence", "false", "on", "off"},
		{"gpu_compute_mode", "exclusive_process", "default", "exclusive_process"},
		{"gpu_compute_mode", "Prohibited", "default", "prohibited"},
		{"gpu_app_clocks_mhz", "2619,1980", "2619,1755", "2619,1980"},
		{"gpu_app_clocks_mhz", " 2619 , 345 ", "2619,1755", "2619,345"},
		{"gpu_power_limit_w", "500", "700", "500"},
		{"gpu_power_limit_w", "450.25", "700", "450.25"},
		{"gpu_power_limit_w", "default", "700", "700"},
		{"gpu_power_limit_w", "0", "700", "700"},
	} {
		orig, want := roundTrip(t, gpuKnobNamed(t, b, d, tc.name), tc.setting)
		if orig != tc.orig || want != tc.want {
			t.Errorf("%s %q: orig %q want %q", tc.name, tc.setting, orig, want)
		}
	}
	// Other GPUs untouched.
	s, _ := b.(gpu.SettingsReader).Settings(devs[2].Index, gpu.AllFields)
	if !s.Persistence || s.PowerLimitMW != 700000 {
		t.Fatalf("GPU 2 changed: %+v", s)
	}
}

func TestGPUAppClocksDefault(t *testing.T) {
	b, devs := mockGPUs(t)
	k := gpuKnobNamed(t, b, devs[0], "gpu_app_clocks_mhz")
	mustApply(t, k, "2619,1980")
	want := mustDesired(t, k, "default")
	if want != "default" { // the backend cannot say the default pair
		t.Fatalf("Desired(default) = %q", want)
	}
	mustApply(t, k, want)
	if v := mustRead(t, k); v != "2619,1755" {
		t.Fatalf("after reset: %q", v)
	}
	// A backend that knows its defaults resolves "default".
	kd := gpuKnobNamed(t, defaultsBackend{b, b.(gpuControl)}, devs[0], "gpu_app_clocks_mhz")
	if v := mustDesired(t, kd, "default"); v != "2619,1755" {
		t.Fatalf("Desired(default) with defaults = %q", v)
	}
	mustApply(t, kd, "2619,1980")
	mustApply(t, kd, "default")
	if v := mustRead(t, kd); v != "2619,1755" {
		t.Fatalf("after reset: %q", v)
	}
}

type defaultsBackend struct {
	gpu.Backend
	gpuControl
}

func (defaultsBackend) DefaultApplicationClocks(int) (uint32, uint32, error) { return 2619, 1755, nil }

func TestGPULockedClocks(t *testing.T) {
	b, devs := mockGPUs(t)
	k := gpuKnobNamed(t, b, devs[1], "gpu_locked_clocks_mhz")
	orig := mustRead(t, k)
	if orig != Unknown {
		t.Fatalf("Read = %q, want Unknown", orig)
	}
	want := mustDesired(t, k, "1980, 1980")
	if want != "1980,1980" {
		t.Fatalf("Desired = %q", want)
	}
	mustApply(t, k, want)
	mustApply(t, k, orig) // restore: reset
	if v := mustDesired(t, k, "UNLOCKED"); v != "unlocked" {
		t.Fatalf("Desired(unlocked) = %q", v)
	}
	mustApply(t, k, "unlocked")
	// The mock refuses a range outside the GPU's (INVALID_ARGUMENT).
	wantErr(t, k.Apply("100,200"), "gpu_locked_clocks_mhz", "lock SM clock")
	for _, bad := range []string{"1980", "2000,1000", "0,100", "a,b", "unknown", "1,10001"} {
		_, err := k.Desired(bad)
		wantErr(t, err, "gpu_locked_clocks_mhz", fmt.Sprintf("%q", bad))
	}
}

func TestGPUDesiredErrors(t *testing.T) {
	b, devs := mockGPUs(t)
	d := devs[0]
	for _, tc := range []struct {
		name, setting string
		want          string
	}{
		{"gpu_persistence", "maybe", `"maybe" is not on or off`},
		{"gpu_compute_mode", "exclusive_thread", "default, exclusive_process, prohibited"},
		{"gpu_app_clocks_mhz", "1980", "<mem>,<sm>"},
		{"gpu_app_clocks_mhz", "0,0", "<mem>,<sm>"},
		{"gpu_power_limit_w", "-5", "watts"},
		{"gpu_power_limit_w", "1.2345", "watts"},
		{"gpu_power_limit_w", "lots", "watts"},
	} {
		_, err := gpuKnobNamed(t, b, d, tc.name).Desired(tc.setting)
		wantErr(t, err, tc.name, tc.want)
	}
	// What the GPU model cannot take is refused at plan time, naming its
	// range (H100: 200..700 W, SM clock up to 1980 MHz, memory 2619 MHz).
	for name, tc := range map[string][2]string{
		"gpu_power_limit_w":     {"50", "50 W is outside what GPU 0 takes (200..700 W)"},
		"gpu_locked_clocks_mhz": {"1000,2100", "above GPU 0's highest SM clock (1980 MHz)"},
		"gpu_app_clocks_mhz":    {"3000,1980", "above what GPU 0 runs (memory 2619, SM 1980 MHz)"},
	} {
		_, err := gpuKnobNamed(t, b, d, name).Desired(tc[0])
		wantErr(t, err, name, tc[1])
	}
	if v, err := gpuKnobNamed(t, b, d, "gpu_power_limit_w").Desired("700"); err != nil || v != "700" {
		t.Errorf("700 W on an H100: %q, %v", v, err)
	}
	// The mock refuses what NVML refuses: not a mismatch, an error.
	wantErr(t, gpuKnobNamed(t, b, d, "gpu_app_clocks_mhz").Apply("1000,1500"), "gpu_app_clocks_mhz")
}

func TestWatts(t *testing.T) {
	for mw, w := range map[uint32]Value{700000: "700", 699500: "699.5", 1: "0.001", 450250: "450.25"} {
		if got := formatWatts(mw); got != w {
			t.Errorf("formatWatts(%d) = %q", mw, got)
		}
		if got, ok := parseWatts(string(w)); !ok || got != mw {
			t.Errorf("parseWatts(%q) = %d %v", w, got, ok)
		}
	}
	for _, bad := range []string{"", ".5", "1.", "1.2.3", "1e3", "-1", "1,5", "100001"} {
		if _, ok := parseWatts(bad); ok && bad != "1." {
			t.Errorf("parseWatts(%q) ok", bad)
		}
	}
}

// fakeGPU is a backend whose settings and setters fail as told.
type fakeGPU struct {
	gpu.None
	s      gpu.Settings
	getErr error
	setErr error
	keep   *gpu.Settings // after a set, Settings returns this
}

func (f *fakeGPU) Settings(int, gpu.Fields) (gpu.Settings, error) {
	if f.keep != nil {
		return *f.keep, f.getErr
	}
	return f.s, f.getErr
}
func (f *fakeGPU) SetPersistence(int, bool) error                 { return f.setErr }
func (f *fakeGPU) SetComputeMode(int, gpu.ComputeMode) error      { return f.setErr }
func (f *fakeGPU) SetApplicationClocks(int, uint32, uint32) error { return f.setErr }
func (f *fakeGPU) ResetApplicationClocks(int) error               { return f.setErr }
func (f *fakeGPU) SetLockedClocks(int, uint32, uint32) error      { return f.setErr }
func (f *fakeGPU) ResetLockedClocks(int) error                    { return f.setErr }
func (f *fakeGPU) SetPowerLimit(int, uint32) error                { return f.setErr }

func TestGPUUnsupported(t *testing.T) {
	dev := gpu.Device{Index: 0, UUID: "GPU-x"}
	// procfs: read-only, no settings.
	pb := gpu.OpenProcfs(host.NewRoot(testroot.Shared(t, "dgxh100")))
	for _, k := range GPUKnobs(pb, dev) {
		_, err := k.Read()
		wantUnsupported(t, err)
		wantUnsupported(t, k.Apply(mustDesiredOr(k)))
	}
	// NVML NOT_SUPPORTED fields.
	f := &fakeGPU{s: gpu.Settings{Persistence: true, PowerLimitMW: 300000,
		Unsupported: []string{"app_clock_sm_mhz", "app_clock_mem_mhz", "default_power_limit_mw"}}}
	_, err := gpuKnobNamed(t, f, dev, "gpu_app_clocks_mhz").Read()
	wantUnsupported(t, err)
	wantErr(t, err, "app_clock_mem_mhz")
	_, err = gpuKnobNamed(t, f, dev, "gpu_power_limit_w").Desired("default")
	wantUnsupported(t, err)
	if v := mustRead(t, gpuKnobNamed(t, f, dev, "gpu_power_limit_w")); v != "300" {
		t.Fatalf("power = %q", v)
	}
	// A setter's NOT_SUPPORTED.
	f.setErr = fmt.Errorf("nvml: GPU 0: set persistence mode: %w", gpu.ErrUnsupported)
	err = gpuKnobNamed(t, f, dev, "gpu_persistence").Apply("on")
	wantUnsupported(t, err)
	wantErr(t, err, "gpu_persistence", "set persistence mode")
	// Any other failure is not unsupported.
	f.setErr = errors.New("GPU is lost")
	err = gpuKnobNamed(t, f, dev, "gpu_persistence").Apply("on")
	wantErr(t, err, "GPU is lost")
	if errors.Is(err, ErrUnsupported) {
		t.Fatal("lost GPU reported unsupported")
	}
	f.getErr = errors.New("GPU is lost")
	_, err = gpuKnobNamed(t, f, dev, "gpu_locked_clocks_mhz").Read()
	wantErr(t, err, "gpu_locked_clocks_mhz", "GPU is lost")
}

func mustDesiredOr(k Knob) Value {
	switch k.ID().Name {
	case "gpu_persistence":
		return "on"
	case "gpu_compute_mode":
		return "default"
	case "gpu_app_clocks_mhz":
		return "1000,1000"
	case "gpu_locked_clocks_mhz":
		return "unlocked"
	}
	return "300"
}

func TestGPUMismatch(t *testing.T) {
	dev := gpu.Device{Index: 0, UUID: "GPU-x"}
	f := &fakeGPU{keep: &gpu.Settings{Persistence: false, ComputeMode: gpu.ComputeDefault, AppClockMemMHz: 2619, AppClockSMMHz: 1755, PowerLimitMW: 700000}}
	for name, v := range map[string]Value{
		"gpu_persistence":    "on",
		"gpu_compute_mode":   "prohibited",
		"gpu_app_clocks_mhz": "2619,1980",
		"gpu_power_limit_w":  "500",
	} {
		err := gpuKnobNamed(t, f, dev, name).Apply(v)
		var mm *MismatchError
		if !errors.As(err, &mm) || mm.Want != v || !strings.HasPrefix(mm.ID.Scope, "gpu:GPU-x") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
