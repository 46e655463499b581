package cuda

// The real driver: libcuda.so.1, loaded at run time with dlopen, called
// through the function table and wrappers of dl.c (declared in dl.h). This
// file loads the library and turns CUresults into errors; dl_context.go
// holds the driver, its contexts and modules, dl_stream.go the streams,
// launches and events. Go holds the driver's handles and host pointers as
// uintptr, never as Go pointers, and passes C only Go memory that holds no
// Go pointers.

/*
#cgo LDFLAGS: -ldl
#include "dl.h"
*/
import "C"

import (
	"fmt"
	"sync"
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
// wrappers of dl.c call the library only once it has succeeded.
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

// size is a byte count as a size_t: never negative.
func size(bytes int64) (C.size_t, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cuda: negative size %d", bytes)
	}
	return C.size_t(bytes), nil
}
