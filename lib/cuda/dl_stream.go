package cuda

/*
#include "dl.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"
)

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
