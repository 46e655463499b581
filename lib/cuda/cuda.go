// Package cuda is the part of NVIDIA's CUDA driver API (libcuda.so.1) that
// gpuprep's probes use, behind small interfaces: a Driver that finds GPUs
// by PCI bus id and opens their primary contexts, a Context that allocates
// memory and loads modules, a Stream that copies, launches and records
// Events. The real driver is loaded at run time (dl.go, dlopen, as
// go-nvml loads NVML), so a node without a driver still runs every program;
// tests use a fake (lib/cuda/cudafake).
//
// CUDA binds a context to the calling OS thread: a caller locks its
// goroutine to its thread (runtime.LockOSThread) for as long as it uses a
// context, and every Context and Stream method makes its context current
// on that thread first. A Context and what it made (streams, events,
// modules) are for one goroutine at a time.
package cuda

import (
	"errors"
	"strconv"
	"time"
)

// ErrNoDriver: libcuda.so.1 could not be loaded (no NVIDIA driver, or a
// driver without CUDA).
var ErrNoDriver = errors.New("CUDA driver library libcuda.so.1 not found")

// ErrNoJIT: the driver cannot compile PTX, because its PTX compiler library
// (libnvidia-ptxjitcompiler.so.1, a package of its own on Debian) is
// missing. cuModuleLoadData answers CUDA_ERROR_JIT_COMPILER_NOT_FOUND.
var ErrNoJIT = errors.New("the driver's PTX JIT compiler (libnvidia-ptxjitcompiler.so.1) is not installed")

// ErrPeerUnsupported: the two GPUs cannot access each other's memory:
// cuCtxEnablePeerAccess answered CUDA_ERROR_PEER_ACCESS_UNSUPPORTED (a
// caller asks Driver.CanAccessPeer first).
var ErrPeerUnsupported = errors.New("peer access between these GPUs is not supported")

// Device is a CUDA device ordinal (CUdevice).
type Device int

// DevicePtr is an address in a GPU's memory (CUdeviceptr).
type DevicePtr uint64

// HostPtr is page-locked host memory (cuMemHostAlloc), as an address. Go
// code that reads or fills it does so through unsafe and only while it is
// allocated; the probes never do (they copy it, and ask its NUMA node).
type HostPtr uintptr

// Attribute is a CUdevice_attribute.
type Attribute int

// The attributes the probes read (CUdevice_attribute values).
const (
	AttrClockRateKHz        Attribute = 13 // CU_DEVICE_ATTRIBUTE_CLOCK_RATE: the SM's peak clock, kHz
	AttrMultiprocessorCount Attribute = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrComputeCapMajor     Attribute = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapMinor     Attribute = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrMaxThreadsPerSM     Attribute = 39 // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	AttrMemoryClockRateKHz  Attribute = 36 // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
	AttrGlobalMemoryBusBits Attribute = 37 // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
	AttrUnifiedAddressing   Attribute = 41 // CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
)

// Driver is the loaded CUDA driver, initialised (cuInit).
type Driver interface {
	// Version is cuDriverGetVersion: 12040 for CUDA 12.4.
	Version() (int, error)
	// DeviceByBusID is cuDeviceGetByPCIBusId ("0000:18:00.0").
	DeviceByBusID(busID string) (Device, error)
	// Attribute is cuDeviceGetAttribute.
	Attribute(dev Device, attr Attribute) (int, error)
	// CanAccessPeer is cuDeviceCanAccessPeer(dev, peer).
	CanAccessPeer(dev, peer Device) (bool, error)
	// PrimaryContext retains dev's primary context
	// (cuDevicePrimaryCtxRetain) and makes it current on the calling
	// thread; Context.Release releases it.
	PrimaryContext(dev Device) (Context, error)
}

// Context is one GPU's context. Its methods make it current on the calling
// thread first (cuCtxSetCurrent).
type Context interface {
	// Device is the context's device.
	Device() Device
	// MemAlloc is cuMemAlloc; MemFree cuMemFree.
	MemAlloc(bytes int64) (DevicePtr, error)
	MemFree(p DevicePtr) error
	// HostAlloc is cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE: page-locked
	// memory, allocated (and its pages placed) under the calling thread's
	// memory policy; HostFree is cuMemFreeHost.
	HostAlloc(bytes int64) (HostPtr, error)
	HostFree(p HostPtr) error
	// LoadModule is cuModuleLoadData of PTX text (JIT-compiled by the
	// driver): ErrNoJIT when the driver's PTX compiler is missing.
	LoadModule(ptx string) (Module, error)
	// EnablePeerAccess is cuCtxEnablePeerAccess(peer): this context may
	// then read and write peer's memory directly. Enabling it twice is
	// not an error.
	EnablePeerAccess(peer Context) error
	// NewStream is cuStreamCreate (CU_STREAM_NON_BLOCKING).
	NewStream() (Stream, error)
	// Release releases the primary context (cuDevicePrimaryCtxRelease).
	Release() error
}

// Module is a loaded module (CUmodule).
type Module interface {
	// Function is cuModuleGetFunction.
	Function(name string) (Function, error)
	// Unload is cuModuleUnload.
	Unload() error
}

// Function is a kernel (CUfunction).
type Function interface {
	// Name is the kernel's name.
	Name() string
}

// Arg is a kernel argument: a DevicePtr, int32, uint32, int64, uint64 or
// float32 (the only kinds Launch accepts).
type Arg any

// Stream is a CUDA stream of its Context: each call enqueues work and
// returns; Synchronize waits for it.
type Stream interface {
	// CopyHtoD, CopyDtoH and CopyDtoD are cuMemcpy*Async.
	CopyHtoD(dst DevicePtr, src HostPtr, bytes int64) error
	CopyDtoH(dst HostPtr, src DevicePtr, bytes int64) error
	CopyDtoD(dst, src DevicePtr, bytes int64) error
	// CopyPeer is cuMemcpyPeerAsync from src in srcCtx to dst in dstCtx.
	// Without peer access enabled the driver copies through host memory,
	// silently: the caller enables it first.
	CopyPeer(dst DevicePtr, dstCtx Context, src DevicePtr, srcCtx Context, bytes int64) error
	// Launch is cuLaunchKernel with a 1-D grid and block and no shared
	// memory.
	Launch(fn Function, gridX, blockX uint32, args ...Arg) error
	// Record creates an event (cuEventCreate, default flags: timing on)
	// and records it on the stream (cuEventRecord).
	Record() (Event, error)
	// Synchronize is cuStreamSynchronize.
	Synchronize() error
	// Destroy is cuStreamDestroy.
	Destroy() error
}

// Event is a recorded event (CUevent).
type Event interface {
	// Since is cuEventElapsedTime(start, this event), once both have
	// completed (cuEventSynchronize of this event first).
	Since(start Event) (time.Duration, error)
	// Destroy is cuEventDestroy.
	Destroy() error
}

// Error is a CUresult other than CUDA_SUCCESS, with the call that returned
// it and the driver's name for it (cuGetErrorName).
type Error struct {
	Call   string // "cuMemAlloc_v2"
	Result int    // the CUresult
	Name   string // "CUDA_ERROR_OUT_OF_MEMORY"
}

func (e *Error) Error() string {
	if e.Name == "" {
		return e.Call + ": CUresult " + strconv.Itoa(e.Result)
	}
	return e.Call + ": " + e.Name
}
