package cuda

// The real driver: libcuda.so.1, loaded at run time with dlopen, called
// through the function table and wrappers of dl.h. Go holds the driver's
// handles and host pointers as uintptr, never as Go pointers, and passes C
// only Go memory that holds no Go pointers.

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// libName is the driver library Open loads (the soname the driver installs).
const libName = "libcuda.so.1"

// CUresult values that Open's driver treats specially.
const (
	resultPeerAccessUnsupported    = 217 // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
	resultJITCompilerNotFound      = 221 // CUDA_ERROR_JIT_COMPILER_NOT_FOUND
	resultUnsupportedPTXVersion    = 222 // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
	resultPeerAccessAlreadyEnabled = 704 // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
)

var (
	openOnce   sync.Once
	openDriver Driver
	openErr    error
)

// Open loads the CUDA driver library libcuda.so.1 (dlopen, RTLD_NOW |
// RTLD_LOCAL), resolves every entry point gpuprep uses (dlsym, by the
// versioned names the CUDA headers map to) and initialises the driver
// (cuInit(0)). Without the library, its error wraps ErrNoDriver and holds
// dlerror's text; a library that lacks an entry point (a driver too old)
// is an error naming it; a failing cuInit (CUDA_ERROR_NO_DEVICE, say) is
// its *Error. The library is loaded once, for good: every later Open
// returns the first one's Driver or error.
func Open() (Driver, error) {
	openOnce.Do(func() { openDriver, openErr = load(libName) })
	return openDriver, openErr
}

// load loads lib (loadLibrary) and calls cuInit(0).
func load(lib string) (Driver, error) {
	if err := loadLibrary(lib); err != nil {
		return nil, err
	}
	if err := check("cuInit", C.gp_cuInit(0)); err != nil {
		return nil, err
	}
	return &driver{}, nil
}

// loadLibrary dlopens lib and resolves the entry points (gp_load); the
// wrappers of dl.h call the library only once it has succeeded.
func loadLibrary(lib string) error {
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var dlerr *C.char
	var missing *C.char
	if C.gp_load(clib, &dlerr, &missing) == 0 {
		return nil
	}
	if dlerr != nil {
		defer C.free(unsafe.Pointer(dlerr))
		return fmt.Errorf("%w: %s", ErrNoDriver, C.GoString(dlerr))
	}
	return fmt.Errorf("cuda: %s has no %s (dlsym): is the NVIDIA driver older than CUDA 11?",
		lib, C.GoString(missing))
}

// check is nil for CUDA_SUCCESS, else call's *Error.
func check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return newError(call, r)
}

// newError is call's *Error for r, named by cuGetErrorName.
func newError(call string, r C.CUresult) *Error {
	e := &Error{Call: call, Result: int(r)}
	if s := C.gp_errorName(r); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

// moduleLoadError is cuModuleLoadData's error for e: ErrNoJIT (with e) when
// the driver has no PTX compiler.
func moduleLoadError(e *Error) error {
	switch e.Result {
	case resultJITCompilerNotFound:
		return fmt.Errorf("%w (%w)", ErrNoJIT, e)
	case resultUnsupportedPTXVersion:
		return fmt.Errorf("%w: the PTX's .version is newer than this driver's compiler", e)
	}
	return e
}

// peerAccessError is cuCtxEnablePeerAccess's error for e: none when peer
// access is already enabled, ErrPeerUnsupported (with e) when the GPUs
// cannot have it.
func peerAccessError(e *Error) error {
	switch e.Result {
	case resultPeerAccessAlreadyEnabled:
		return nil
	case resultPeerAccessUnsupported:
		return fmt.Errorf("%w (%w)", ErrPeerUnsupported, e)
	}
	return e
}

// argSlot is the room each kernel argument gets in Launch's argument
// buffer: enough for the largest kind, and aligned for it.
const argSlot = 8

// encodeArgs lays args out for gp_launch: each value at the start of its
// 8-byte slot, in the machine's byte order, as the kernel reads it.
func encodeArgs(args []Arg) ([]byte, error) {
	buf := make([]byte, argSlot*len(args))
	for i, a := range args {
		b := buf[argSlot*i:]
		switch v := a.(type) {
		case DevicePtr:
			binary.NativeEndian.PutUint64(b, uint64(v))
		case int32:
			binary.NativeEndian.PutUint32(b, uint32(v))
		case uint32:
			binary.NativeEndian.PutUint32(b, v)
		case int64:
			binary.NativeEndian.PutUint64(b, uint64(v))
		case uint64:
			binary.NativeEndian.PutUint64(b, v)
		case float32:
			binary.NativeEndian.PutUint32(b, math.Float32bits(v))
		default:
			return nil, fmt.Errorf("cuda: kernel argument %d is a %T: Launch takes "+
				"DevicePtr, int32, uint32, int64, uint64 or float32", i, a)
		}
	}
	return buf, nil
}

// msDuration is cuEventElapsedTime's milliseconds as a Duration.
func msDuration(ms float32) time.Duration {
	return time.Duration(math.Round(float64(ms) * float64(time.Millisecond)))
}

// size is a byte count as a size_t: never negative.
func size(bytes int64) (C.size_t, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cuda: negative size %d", bytes)
	}
	return C.size_t(bytes), nil
}

// driver is the loaded driver; its state is dl.h's table.
type driver struct{}

// Version is cuDriverGetVersion.
func (*driver) Version() (int, error) {
	var v C.int
	if err := check("cuDriverGetVersion", C.gp_cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceByBusID is cuDeviceGetByPCIBusId.
func (*driver) DeviceByBusID(busID string) (Device, error) {
	cid := C.CString(busID)
	defer C.free(unsafe.Pointer(cid))
	var dev C.CUdevice
	if err := check("cuDeviceGetByPCIBusId", C.gp_cuDeviceGetByPCIBusId(&dev, cid)); err != nil {
		return 0, fmt.Errorf("GPU %s: %w", busID, err)
	}
	return Device(dev), nil
}

// Attribute is cuDeviceGetAttribute.
func (*driver) Attribute(dev Device, attr Attribute) (int, error) {
	var v C.int
	r := C.gp_cuDeviceGetAttribute(&v, C.int(attr), C.CUdevice(dev))
	if err := check("cuDeviceGetAttribute", r); err != nil {
		return 0, fmt.Errorf("attribute %d of device %d: %w", attr, dev, err)
	}
	return int(v), nil
}

// CanAccessPeer is cuDeviceCanAccessPeer.
func (*driver) CanAccessPeer(dev, peer Device) (bool, error) {
	var can C.int
	r := C.gp_cuDeviceCanAccessPeer(&can, C.CUdevice(dev), C.CUdevice(peer))
	if err := check("cuDeviceCanAccessPeer", r); err != nil {
		return false, err
	}
	return can != 0, nil
}

// PrimaryContext is cuDevicePrimaryCtxRetain, then cuCtxSetCurrent.
func (*driver) PrimaryContext(dev Device) (Context, error) {
	var h C.uintptr_t
	r := C.gp_cuDevicePrimaryCtxRetain(&h, C.CUdevice(dev))
	if err := check("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, fmt.Errorf("device %d: %w", dev, err)
	}
	c := &dlContext{dev: dev, h: uintptr(h)}
	if err := c.bind(); err != nil {
		C.gp_cuDevicePrimaryCtxRelease_v2(C.CUdevice(dev))
		return nil, err
	}
	return c, nil
}

// ownContext is c as this driver's context.
func ownContext(c Context) (*dlContext, error) {
	own, ok := c.(*dlContext)
	if !ok {
		return nil, fmt.Errorf("cuda: a %T is not a context of the CUDA driver", c)
	}
	return own, nil
}

// dlContext is a retained primary context.
type dlContext struct {
	dev      Device
	h        uintptr // CUcontext
	released bool
}

var errReleased = errors.New("cuda: the context was released")

// bind makes c current on the calling thread (cuCtxSetCurrent).
func (c *dlContext) bind() error {
	if c.released {
		return errReleased
	}
	return check("cuCtxSetCurrent", C.gp_cuCtxSetCurrent(C.uintptr_t(c.h)))
}

// Device is the context's device.
func (c *dlContext) Device() Device { return c.dev }

// MemAlloc is cuMemAlloc_v2.
func (c *dlContext) MemAlloc(bytes int64) (DevicePtr, error) {
	n, err := size(bytes)
	if err != nil {
		return 0, err
	}
	if err := c.bind(); err != nil {
		return 0, err
	}
	var p C.CUdeviceptr
	if err := check("cuMemAlloc_v2", C.gp_cuMemAlloc_v2(&p, n)); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// MemFree is cuMemFree_v2.
func (c *dlContext) MemFree(p DevicePtr) error {
	if err := c.bind(); err != nil {
		return err
	}
	return check("cuMemFree_v2", C.gp_cuMemFree_v2(C.CUdeviceptr(p)))
}

// HostAlloc is cuMemHostAlloc (CU_MEMHOSTALLOC_PORTABLE).
func (c *dlContext) HostAlloc(bytes int64) (HostPtr, error) {
	n, err := size(bytes)
	if err != nil {
		return 0, err
	}
	if err := c.bind(); err != nil {
		return 0, err
	}
	var p C.uintptr_t
	if err := check("cuMemHostAlloc", C.gp_cuMemHostAlloc(&p, n)); err != nil {
		return 0, err
	}
	return HostPtr(p), nil
}

// HostFree is cuMemFreeHost.
func (c *dlContext) HostFree(p HostPtr) error {
	if err := c.bind(); err != nil {
		return err
	}
	return check("cuMemFreeHost", C.gp_cuMemFreeHost(C.uintptr_t(p)))
}

// LoadModule is cuModuleLoadData of a NUL-terminated copy of ptx in C
// memory: ErrNoJIT on CUDA_ERROR_JIT_COMPILER_NOT_FOUND.
func (c *dlContext) LoadModule(ptx string) (Module, error) {
	if strings.IndexByte(ptx, 0) >= 0 {
		return nil, errors.New("cuda: the PTX text holds a NUL byte")
	}
	if err := c.bind(); err != nil {
		return nil, err
	}
	cptx := C.CString(ptx)
	defer C.free(unsafe.Pointer(cptx))
	var h C.uintptr_t
	if r := C.gp_cuModuleLoadData(&h, cptx); r != 0 {
		return nil, moduleLoadError(newError("cuModuleLoadData", r))
	}
	return &dlModule{ctx: c, h: uintptr(h)}, nil
}

// EnablePeerAccess is cuCtxEnablePeerAccess(peer, 0):
// CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is success,
// CUDA_ERROR_PEER_ACCESS_UNSUPPORTED ErrPeerUnsupported.
func (c *dlContext) EnablePeerAccess(peer Context) error {
	p, err := ownContext(peer)
	if err != nil {
		return err
	}
	if err := c.bind(); err != nil {
		return err
	}
	if r := C.gp_cuCtxEnablePeerAccess(C.uintptr_t(p.h)); r != 0 {
		return peerAccessError(newError("cuCtxEnablePeerAccess", r))
	}
	return nil
}

// NewStream is cuStreamCreate (CU_STREAM_NON_BLOCKING).
func (c *dlContext) NewStream() (Stream, error) {
	if err := c.bind(); err != nil {
		return nil, err
	}
	var h C.uintptr_t
	if err := check("cuStreamCreate", C.gp_cuStreamCreate(&h)); err != nil {
		return nil, err
	}
	return &dlStream{ctx: c, h: uintptr(h)}, nil
}

// Release is cuDevicePrimaryCtxRelease_v2; the context is unusable after.
func (c *dlContext) Release() error {
	if c.released {
		return errReleased
	}
	r := C.gp_cuDevicePrimaryCtxRelease_v2(C.CUdevice(c.dev))
	if err := check("cuDevicePrimaryCtxRelease_v2", r); err != nil {
		return err
	}
	c.released = true
	return nil
}

// dlModule is a loaded module.
type dlModule struct {
	ctx *dlContext
	h   uintptr // CUmodule; 0 once unloaded
}

var errUnloaded = errors.New("cuda: the module was unloaded")

// Function is cuModuleGetFunction.
func (m *dlModule) Function(name string) (Function, error) {
	if m.h == 0 {
		return nil, errUnloaded
	}
	if err := m.ctx.bind(); err != nil {
		return nil, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var h C.uintptr_t
	r := C.gp_cuModuleGetFunction(&h, C.uintptr_t(m.h), cname)
	if err := check("cuModuleGetFunction", r); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return &dlFunction{name: name, h: uintptr(h)}, nil
}

// Unload is cuModuleUnload.
func (m *dlModule) Unload() error {
	if m.h == 0 {
		return errUnloaded
	}
	if err := m.ctx.bind(); err != nil {
		return err
	}
	if err := check("cuModuleUnload", C.gp_cuModuleUnload(C.uintptr_t(m.h))); err != nil {
		return err
	}
	m.h = 0
	return nil
}

// dlFunction is a kernel of a loaded module.
type dlFunction struct {
	name string
	h    uintptr // CUfunction
}

// Name is the kernel's name.
func (f *dlFunction) Name() string { return f.name }

// dlStream is a stream of its context.
type dlStream struct {
	ctx *dlContext
	h   uintptr // CUstream; 0 once destroyed (0 would be the NULL stream)
}

var errStreamDestroyed = errors.New("cuda: the stream was destroyed")

// bind makes the stream's context current (cuCtxSetCurrent).
func (s *dlStream) bind() error {
	if s.h == 0 {
		return errStreamDestroyed
	}
	return s.ctx.bind()
}

// CopyHtoD is cuMemcpyHtoDAsync_v2.
func (s *dlStream) CopyHtoD(dst DevicePtr, src HostPtr, bytes int64) error {
	n, err := size(bytes)
	if err != nil {
		return err
	}
	if err := s.bind(); err != nil {
		return err
	}
	r := C.gp_cuMemcpyHtoDAsync_v2(C.CUdeviceptr(dst), C.uintptr_t(src), n, C.uintptr_t(s.h))
	return check("cuMemcpyHtoDAsync_v2", r)
}

// CopyDtoH is cuMemcpyDtoHAsync_v2.
func (s *dlStream) CopyDtoH(dst HostPtr, src DevicePtr, bytes int64) error {
	n, err := size(bytes)
	if err != nil {
		return err
	}
	if err := s.bind(); err != nil {
		return err
	}
	r := C.gp_cuMemcpyDtoHAsync_v2(C.uintptr_t(dst), C.CUdeviceptr(src), n, C.uintptr_t(s.h))
	return check("cuMemcpyDtoHAsync_v2", r)
}

// CopyDtoD is cuMemcpyDtoDAsync_v2.
func (s *dlStream) CopyDtoD(dst, src DevicePtr, bytes int64) error {
	n, err := size(bytes)
	if err != nil {
		return err
	}
	if err := s.bind(); err != nil {
		return err
	}
	r := C.gp_cuMemcpyDtoDAsync_v2(C.CUdeviceptr(dst), C.CUdeviceptr(src), n, C.uintptr_t(s.h))
	return check("cuMemcpyDtoDAsync_v2", r)
}

// CopyPeer is cuMemcpyPeerAsync.
func (s *dlStream) CopyPeer(dst DevicePtr, dstCtx Context, src DevicePtr, srcCtx Context, bytes int64) error {
	n, err := size(bytes)
	if err != nil {
		return err
	}
	dc, err := ownContext(dstCtx)
	if err != nil {
		return err
	}
	sc, err := ownContext(srcCtx)
	if err != nil {
		return err
	}
	if err := s.bind(); err != nil {
		return err
	}
	r := C.gp_cuMemcpyPeerAsync(C.CUdeviceptr(dst), C.uintptr_t(dc.h),
		C.CUdeviceptr(src), C.uintptr_t(sc.h), n, C.uintptr_t(s.h))
	return check("cuMemcpyPeerAsync", r)
}

// Launch is cuLaunchKernel(fn, gridX×1×1 blocks of blockX×1×1 threads, no
// shared memory): the kernelParams array and the values it points at are
// malloc'd for the call (gp_launch).
func (s *dlStream) Launch(fn Function, gridX, blockX uint32, args ...Arg) error {
	f, ok := fn.(*dlFunction)
	if !ok {
		return fmt.Errorf("cuda: a %T is not a kernel of the CUDA driver", fn)
	}
	buf, err := encodeArgs(args)
	if err != nil {
		return err
	}
	if err := s.bind(); err != nil {
		return err
	}
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	r := C.gp_launch(C.uintptr_t(f.h), C.uint(gridX), C.uint(blockX), C.uintptr_t(s.h), p, C.int(len(args)))
	if r == C.GP_NO_ARG_MEMORY {
		return fmt.Errorf("cuda: launching %s: no memory for its arguments", f.name)
	}
	if err := check("cuLaunchKernel", r); err != nil {
		return fmt.Errorf("kernel %s: %w", f.name, err)
	}
	return nil
}

// Record is cuEventCreate (flags 0: timing on), then cuEventRecord on the
// stream.
func (s *dlStream) Record() (Event, error) {
	if err := s.bind(); err != nil {
		return nil, err
	}
	var h C.uintptr_t
	if err := check("cuEventCreate", C.gp_cuEventCreate(&h)); err != nil {
		return nil, err
	}
	if err := check("cuEventRecord", C.gp_cuEventRecord(h, C.uintptr_t(s.h))); err != nil {
		C.gp_cuEventDestroy_v2(h)
		return nil, err
	}
	return &dlEvent{ctx: s.ctx, h: uintptr(h)}, nil
}

// Synchronize is cuStreamSynchronize.
func (s *dlStream) Synchronize() error {
	if err := s.bind(); err != nil {
		return err
	}
	return check("cuStreamSynchronize", C.gp_cuStreamSynchronize(C.uintptr_t(s.h)))
}

// Destroy is cuStreamDestroy_v2.
func (s *dlStream) Destroy() error {
	if err := s.bind(); err != nil {
		return err
	}
	if err := check("cuStreamDestroy_v2", C.gp_cuStreamDestroy_v2(C.uintptr_t(s.h))); err != nil {
		return err
	}
	s.h = 0
	return nil
}

// dlEvent is a recorded event.
type dlEvent struct {
	ctx *dlContext
	h   uintptr // CUevent; 0 once destroyed
}

var errEventDestroyed = errors.New("cuda: the event was destroyed")

// Since is cuEventSynchronize(e), then cuEventElapsedTime(start, e).
func (e *dlEvent) Since(start Event) (time.Duration, error) {
	st, ok := start.(*dlEvent)
	if !ok {
		return 0, fmt.Errorf("cuda: a %T is not an event of the CUDA driver", start)
	}
	if e.h == 0 || st.h == 0 {
		return 0, errEventDestroyed
	}
	if err := e.ctx.bind(); err != nil {
		return 0, err
	}
	if err := check("cuEventSynchronize", C.gp_cuEventSynchronize(C.uintptr_t(e.h))); err != nil {
		return 0, err
	}
	var ms C.float
	r := C.gp_cuEventElapsedTime(&ms, C.uintptr_t(st.h), C.uintptr_t(e.h))
	if err := check("cuEventElapsedTime", r); err != nil {
		return 0, err
	}
	return msDuration(float32(ms)), nil
}

// Destroy is cuEventDestroy_v2.
func (e *dlEvent) Destroy() error {
	if e.h == 0 {
		return errEventDestroyed
	}
	if err := e.ctx.bind(); err != nil {
		return err
	}
	if err := check("cuEventDestroy_v2", C.gp_cuEventDestroy_v2(C.uintptr_t(e.h))); err != nil {
		return err
	}
	e.h = 0
	return nil
}
