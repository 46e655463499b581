package cuda

/*
#include "dl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// driver is the loaded driver; its state is dl.c's table.
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
