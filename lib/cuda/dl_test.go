//go:build cgo

package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Open exists only in cgo builds, and so do these tests.
//
// The tests of the real driver (TestDriver*) run only where libcuda.so.1
// loads, and skip elsewhere. CI (CI=true) has no GPU and no driver, so they
// skip there too, and that is expected: they are meant for a GPU node (an
// H200 one, say), where `go test -v -run TestDriver ./lib/cuda` checks the
// copies, the events and the PTX JIT against the hardware. They use every
// GPU that cuDeviceGetByPCIBusId finds among $GPUPREP_TEST_GPUS (bus ids,
// comma-separated), else /proc/driver/nvidia/gpus, else nvidia-smi's list.

// TestOpenNoDriver: without libcuda.so.1 (this development machine, CI),
// Open fails with ErrNoDriver and says which library it missed; a second
// Open answers the same.
func TestOpenNoDriver(t *testing.T) {
	_, err := Open()
	if err == nil {
		t.Skip("libcuda.so.1 loads here: TestDriver tests it")
	}
	var ce *Error
	if errors.As(err, &ce) {
		t.Skipf("libcuda.so.1 loads here but cuInit fails: %v", err)
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open: %v, want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("Open: %q does not name libcuda.so.1", err)
	}
	if _, err2 := Open(); err2 != err {
		t.Errorf("second Open: %v, want the first one's error %v", err2, err)
	}
}

// TestLoadAbsentLibrary: dlopen's failure is ErrNoDriver with dlerror's text.
func TestLoadAbsentLibrary(t *testing.T) {
	const lib = "libgpuprep-absent-test.so.1"
	_, err := load(lib)
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), lib) {
		t.Fatalf("load(%s): %v, want ErrNoDriver naming it", lib, err)
	}
}

// TestLoadMissingSymbol: a library without the driver's entry points (libc)
// is an error naming the first one missing, not ErrNoDriver.
func TestLoadMissingSymbol(t *testing.T) {
	_, err := load("libc.so.6")
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("no glibc here: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "cuInit") {
		t.Fatalf("load(libc.so.6): %v, want an error naming cuInit", err)
	}
}

func TestEncodeArgs(t *testing.T) {
	buf, err := encodeArgs([]Arg{DevicePtr(0x7f0012345678), int32(-7), uint32(0xA5A5A5A5),
		int64(-1 << 40), uint64(math.MaxUint64), float32(2.5)})
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	checks := []struct {
		got, want uint64
	}{
		{ne.Uint64(buf[0:]), 0x7f0012345678},
		{ne.Uint64(buf[8:]), 0xFFFFFFF9}, // -7 as 4 bytes, the slot's rest zero
		{ne.Uint64(buf[16:]), 0xA5A5A5A5},
		{ne.Uint64(buf[24:]), uint64(1<<64 - 1<<40)},
		{ne.Uint64(buf[32:]), math.MaxUint64},
		{ne.Uint64(buf[40:]), uint64(math.Float32bits(2.5))},
	}
	if len(buf) != 6*argSlot {
		t.Fatalf("%d bytes for 6 arguments", len(buf))
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("argument %d: slot %#x, want %#x", i, c.got, c.want)
		}
	}
	if _, err := encodeArgs([]Arg{DevicePtr(1), 3}); err == nil || !strings.Contains(err.Error(), "argument 1 is a int") {
		t.Errorf("an int argument: %v, want an error naming it", err)
	}
}

func TestResultErrors(t *testing.T) {
	noJIT := &Error{Call: "cuModuleLoadData", Result: 221, Name: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"}
	err := moduleLoadError(noJIT)
	var ce *Error
	if !errors.Is(err, ErrNoJIT) || !errors.As(err, &ce) || ce != noJIT {
		t.Errorf("JIT compiler not found: %v, want ErrNoJIT and the *Error", err)
	}
	invalid := &Error{Call: "cuModuleLoadData", Result: 218, Name: "CUDA_ERROR_INVALID_PTX"}
	if err := moduleLoadError(invalid); err != invalid {
		t.Errorf("invalid PTX: %v, want the *Error alone", err)
	}
	if err := peerAccessError(&Error{Result: 704}); err != nil {
		t.Errorf("peer access already enabled: %v, want nil", err)
	}
	unsupported := &Error{Call: "cuCtxEnablePeerAccess", Result: 217}
	err = peerAccessError(unsupported)
	if !errors.Is(err, ErrPeerUnsupported) || !errors.As(err, &ce) || ce != unsupported {
		t.Errorf("peer access unsupported: %v, want ErrPeerUnsupported and the *Error", err)
	}
	if d := msDuration(1.5); d != 1500*time.Microsecond {
		t.Errorf("1.5 ms is %v", d)
	}
}

// openOrSkip is Open's driver, or a skip where there is none.
func openOrSkip(t *testing.T) Driver {
	t.Helper()
	drv, err := Open()
	if errors.Is(err, ErrNoDriver) {
		// No driver: this machine, and CI (CI=true), which has no GPU.
		t.Skipf("no CUDA driver: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if again, err := Open(); again != drv || err != nil {
		t.Fatalf("second Open: %v, %v, want the first one's driver", again, err)
	}
	return drv
}

// testBusIDs lists the GPUs to test, by PCI bus id.
func testBusIDs() []string {
	if s := os.Getenv("GPUPREP_TEST_GPUS"); s != "" {
		return strings.Split(s, ",")
	}
	var ids []string
	if ents, err := os.ReadDir("/proc/driver/nvidia/gpus"); err == nil {
		for _, e := range ents {
			ids = append(ids, e.Name())
		}
	}
	if len(ids) > 0 {
		return ids
	}
	out, err := exec.Command("nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// testDevices is every GPU of testBusIDs that the driver finds.
func testDevices(t *testing.T, drv Driver) []Device {
	t.Helper()
	ids := testBusIDs()
	seen := map[Device]bool{}
	var devs []Device
	for _, id := range ids {
		dev, err := drv.DeviceByBusID(id)
		if err != nil {
			t.Logf("skipping GPU %s: %v", id, err)
			continue
		}
		if !seen[dev] {
			seen[dev] = true
			devs = append(devs, dev)
		}
	}
	if len(devs) == 0 {
		t.Fatalf("the driver loads, but finds none of the GPUs %q: set GPUPREP_TEST_GPUS", ids)
	}
	return devs
}

// lockThread locks the test's goroutine to its thread, as CUDA's callers do.
func lockThread(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}

// primary is dev's primary context, released when the test ends.
func primary(t *testing.T, drv Driver, dev Device) Context {
	t.Helper()
	ctx, err := drv.PrimaryContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Release(); err != nil {
			t.Error(err)
		}
		if err := ctx.Release(); !errors.Is(err, errReleased) {
			t.Errorf("second Release: %v", err)
		}
	})
	if ctx.Device() != dev {
		t.Errorf("context of device %d says %d", dev, ctx.Device())
	}
	return ctx
}

// hostMem is n bytes of pinned memory and their view, freed at the end.
func hostMem(t *testing.T, ctx Context, n int64) (HostPtr, []byte) {
	t.Helper()
	p, err := ctx.HostAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.HostFree(p); err != nil {
			t.Error(err)
		}
	})
	// HostPtr is an address outside Go's heap; read it as a pointer
	// without converting a uintptr (which go vet rightly flags elsewhere).
	return p, unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), n)
}

// devMem is n bytes of ctx's GPU memory, freed at the end.
func devMem(t *testing.T, ctx Context, n int64) DevicePtr {
	t.Helper()
	p, err := ctx.MemAlloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.MemFree(p); err != nil {
			t.Error(err)
		}
	})
	return p
}

// newStream is a stream of ctx, destroyed at the end.
func newStream(t *testing.T, ctx Context) Stream {
	t.Helper()
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Destroy(); err != nil {
			t.Error(err)
		}
		if err := s.Synchronize(); !errors.Is(err, errStreamDestroyed) {
			t.Errorf("Synchronize of a destroyed stream: %v", err)
		}
	})
	return s
}

// record is an event recorded on s, destroyed at the end.
func record(t *testing.T, s Stream) Event {
	t.Helper()
	e, err := s.Record()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Destroy(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// fillPattern fills b with a xorshift sequence from seed.
func fillPattern(b []byte, seed uint64) {
	x := seed
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
}

// sameBytes fails the test at the first byte where got and want differ.
func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d is %#x, want %#x", what, i, got[i], want[i])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDriver(t *testing.T) {
	drv := openOrSkip(t)
	v, err := drv.Version()
	must(t, err)
	if v < 11000 {
		t.Errorf("driver version %d: cuDevicePrimaryCtxRelease_v2 needs CUDA 11", v)
	}
	devs := testDevices(t, drv)
	t.Logf("CUDA driver %d.%d, devices %v", v/1000, v%1000/10, devs)
	t.Run("attributes", func(t *testing.T) { testAttributes(t, drv, devs[0]) })
	t.Run("copy", func(t *testing.T) { testCopy(t, drv, devs[0]) })
	t.Run("kernel", func(t *testing.T) { testKernel(t, drv, devs[0]) })
	t.Run("peer", func(t *testing.T) { testPeer(t, drv, devs) })
}

// testAttributes reads the attributes the probes use: each is plausible.
func testAttributes(t *testing.T, drv Driver, dev Device) {
	attrs := map[Attribute]int{} // the least plausible value
	for _, a := range []Attribute{AttrClockRateKHz, AttrMultiprocessorCount, AttrMaxThreadsPerSM,
		AttrMemoryClockRateKHz, AttrGlobalMemoryBusBits, AttrUnifiedAddressing} {
		attrs[a] = 1
	}
	attrs[AttrComputeCapMajor], attrs[AttrComputeCapMinor] = 3, 0
	for a, least := range attrs {
		v, err := drv.Attribute(dev, a)
		must(t, err)
		if v < least {
			t.Errorf("attribute %d: %d, want at least %d", a, v, least)
		}
		t.Logf("attribute %d: %d", a, v)
	}
	if _, err := drv.Attribute(dev, Attribute(-1)); err == nil {
		t.Error("attribute -1: no error")
	}
}

// testCopy copies 64 MiB of a pattern host -> device -> device -> host
// through pinned memory, times each copy with events and checks that the
// bytes come back.
func testCopy(t *testing.T, drv Driver, dev Device) {
	lockThread(t)
	const n = 64 << 20
	ctx := primary(t, drv, dev)
	src, in := hostMem(t, ctx, n)
	dst, out := hostMem(t, ctx, n)
	d1, d2 := devMem(t, ctx, n), devMem(t, ctx, n)
	fillPattern(in, 0x9E3779B97F4A7C15)
	clear(out)
	s := newStream(t, ctx)
	wall := time.Now()
	ev := []Event{record(t, s)}
	must(t, s.CopyHtoD(d1, src, n))
	ev = append(ev, record(t, s))
	must(t, s.CopyDtoD(d2, d1, n))
	ev = append(ev, record(t, s))
	must(t, s.CopyDtoH(dst, d2, n))
	ev = append(ev, record(t, s))
	must(t, s.Synchronize())
	elapsed := time.Since(wall)
	sameBytes(t, "64 MiB through the GPU", out, in)
	checkTimes(t, ev, elapsed, n)
}

// checkTimes checks the copies' event times: each takes time, none is
// faster than 1 TB/s over the host link (none is), and together they
// took no longer than the wall clock saw.
func checkTimes(t *testing.T, ev []Event, wall time.Duration, n int64) {
	t.Helper()
	total, err := ev[len(ev)-1].Since(ev[0])
	must(t, err)
	if total <= 0 || total > wall {
		t.Errorf("the copies took %v by the events, %v by the wall clock", total, wall)
	}
	for i, what := range []string{"host to device", "device to device", "device to host"} {
		d, err := ev[i+1].Since(ev[i])
		must(t, err)
		gbps := float64(n) / d.Seconds() / 1e9
		t.Logf("%s: %v, %.1f GB/s", what, d, gbps)
		if d <= 0 || (i != 1 && gbps > 1000) {
			t.Errorf("%s: %v for %d bytes", what, d, n)
		}
	}
}

// testPTX is two kernels: gpuprep_fill stores v+i in out[i] for i < n;
// gpuprep_args stores its arguments, one of each kind Launch takes.
const testPTX = `
.version 6.0
.target sm_50
.address_size 64

.visible .entry gpuprep_fill(
	.param .u64 fill_out,
	.param .u32 fill_n,
	.param .u32 fill_v
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [fill_out];
	ld.param.u32 %r1, [fill_n];
	ld.param.u32 %r2, [fill_v];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r6, %r3, %r4, %r5;
	setp.ge.u32 %p1, %r6, %r1;
	@%p1 bra FILL_DONE;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r6, 4;
	add.s64 %rd4, %rd2, %rd3;
	add.s32 %r7, %r2, %r6;
	st.global.u32 [%rd4], %r7;
FILL_DONE:
	ret;
}

.visible .entry gpuprep_args(
	.param .u64 args_out,
	.param .s32 args_a,
	.param .s64 args_b,
	.param .u64 args_c,
	.param .f32 args_f,
	.param .u32 args_u
)
{
	.reg .b32 %r<3>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<6>;

	ld.param.u64 %rd1, [args_out];
	ld.param.s32 %r1, [args_a];
	ld.param.s64 %rd2, [args_b];
	ld.param.u64 %rd3, [args_c];
	ld.param.f32 %f1, [args_f];
	ld.param.u32 %r2, [args_u];
	cvta.to.global.u64 %rd4, %rd1;
	cvt.s64.s32 %rd5, %r1;
	st.global.u64 [%rd4], %rd5;
	st.global.u64 [%rd4+8], %rd2;
	st.global.u64 [%rd4+16], %rd3;
	st.global.f32 [%rd4+24], %f1;
	st.global.u32 [%rd4+28], %r2;
	ret;
}
`

// loadTestModule loads testPTX into ctx, unloaded at the end; a driver
// without its PTX compiler skips.
func loadTestModule(t *testing.T, ctx Context) Module {
	t.Helper()
	var ce *Error
	if _, err := ctx.LoadModule("this is not PTX"); !errors.As(err, &ce) {
		t.Errorf("LoadModule of text that is not PTX: %v, want cuModuleLoadData's *Error", err)
	}
	mod, err := ctx.LoadModule(testPTX)
	if errors.Is(err, ErrNoJIT) {
		t.Skipf("the driver cannot compile PTX: %v", err)
	}
	must(t, err)
	t.Cleanup(func() {
		if err := mod.Unload(); err != nil {
			t.Error(err)
		}
		if _, err := mod.Function("gpuprep_fill"); !errors.Is(err, errUnloaded) {
			t.Errorf("Function of an unloaded module: %v", err)
		}
	})
	if _, err := mod.Function("gpuprep_absent"); !errors.As(err, &ce) || ce.Call != "cuModuleGetFunction" {
		t.Errorf("Function(gpuprep_absent): %v, want cuModuleGetFunction's *Error", err)
	}
	return mod
}

// testKernel runs gpuprep_fill over 1000 of 1024 words (the other 24 keep
// their bytes) and gpuprep_args with one argument of each kind.
func testKernel(t *testing.T, drv Driver, dev Device) {
	lockThread(t)
	const words, n, v = 1024, 1000, 0xC0DE0000
	ctx := primary(t, drv, dev)
	mod := loadTestModule(t, ctx)
	fill, err := mod.Function("gpuprep_fill")
	must(t, err)
	if fill.Name() != "gpuprep_fill" {
		t.Errorf("Name %q", fill.Name())
	}
	h, hb := hostMem(t, ctx, 4*words)
	d := devMem(t, ctx, 4*words)
	for i := range hb {
		hb[i] = 0xFF
	}
	s := newStream(t, ctx)
	must(t, s.CopyHtoD(d, h, 4*words))
	must(t, s.Launch(fill, (n+255)/256, 256, d, uint32(n), uint32(v)))
	must(t, s.CopyDtoH(h, d, 4*words))
	must(t, s.Synchronize())
	for i := 0; i < words; i++ {
		want := uint32(0xFFFFFFFF)
		if i < n {
			want = v + uint32(i)
		}
		if got := binary.NativeEndian.Uint32(hb[4*i:]); got != want {
			t.Fatalf("out[%d] = %#x, want %#x", i, got, want)
		}
	}
	testArgs(t, mod, s, h, hb, d)
}

// testArgs launches gpuprep_args and reads back what it stored.
func testArgs(t *testing.T, mod Module, s Stream, h HostPtr, hb []byte, d DevicePtr) {
	t.Helper()
	fn, err := mod.Function("gpuprep_args")
	must(t, err)
	if err := s.Launch(fn, 1, 1, d, 7); err == nil {
		t.Fatal("Launch with an int argument: no error")
	}
	must(t, s.Launch(fn, 1, 1, d, int32(-7), int64(-1<<40), uint64(0xFEDCBA9876543210),
		float32(2.5), uint32(0xA5A5A5A5)))
	must(t, s.CopyDtoH(h, d, 32))
	must(t, s.Synchronize())
	ne := binary.NativeEndian
	if got := int64(ne.Uint64(hb[0:])); got != -7 {
		t.Errorf("int32 argument: %d, want -7", got)
	}
	if got := int64(ne.Uint64(hb[8:])); got != -1<<40 {
		t.Errorf("int64 argument: %d, want %d", got, int64(-1<<40))
	}
	if got := ne.Uint64(hb[16:]); got != 0xFEDCBA9876543210 {
		t.Errorf("uint64 argument: %#x", got)
	}
	if got := math.Float32frombits(ne.Uint32(hb[24:])); got != 2.5 {
		t.Errorf("float32 argument: %v, want 2.5", got)
	}
	if got := ne.Uint32(hb[28:]); got != 0xA5A5A5A5 {
		t.Errorf("uint32 argument: %#x", got)
	}
}

// testPeer enables peer access from the first GPU to the second (twice:
// the second is no error) where the driver says they can have it, and
// copies 16 MiB from one to the other with cuMemcpyPeerAsync.
func testPeer(t *testing.T, drv Driver, devs []Device) {
	if len(devs) < 2 {
		t.Skip("one GPU")
	}
	lockThread(t)
	const n = 16 << 20
	a, b := primary(t, drv, devs[0]), primary(t, drv, devs[1])
	can, err := drv.CanAccessPeer(devs[0], devs[1])
	must(t, err)
	for range 2 {
		err := a.EnablePeerAccess(b)
		if can && err != nil || !can && !errors.Is(err, ErrPeerUnsupported) {
			t.Fatalf("EnablePeerAccess (CanAccessPeer %v): %v", can, err)
		}
	}
	src, in := hostMem(t, a, n)
	dst, out := hostMem(t, b, n)
	fillPattern(in, 0xD1B54A32D192ED03)
	da, db := devMem(t, a, n), devMem(t, b, n)
	sa, sb := newStream(t, a), newStream(t, b)
	must(t, sa.CopyHtoD(da, src, n))
	start := record(t, sa)
	must(t, sa.CopyPeer(db, b, da, a, n))
	end := record(t, sa)
	must(t, sa.Synchronize())
	must(t, sb.CopyDtoH(dst, db, n))
	must(t, sb.Synchronize())
	sameBytes(t, "16 MiB from GPU to GPU", out, in)
	d, err := end.Since(start)
	must(t, err)
	t.Logf("peer copy (access %v): %v, %.1f GB/s", can, d, float64(n)/d.Seconds()/1e9)
}
