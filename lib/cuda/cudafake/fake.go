// Package cudafake is a CUDA driver for tests: GPUs with set bandwidths and
// FLOP rates, whose streams keep a simulated clock. A copy or a kernel
// advances its stream's clock by what the GPU's rates make it take; an
// event reads that clock. It checks what the real driver would refuse
// (a context used without being current is not modelled: every call names
// its context) and counts what is left allocated, so a test can see that a
// probe frees what it took.
package cudafake

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"gpuprep/lib/cuda"
)

// GPU is one fake GPU: what it reports and how fast it is.
type GPU struct {
	BusID            string // canonical: "0000:18:00.0"
	SMs              int
	CCMajor, CCMinor int
	ClockKHz         int // CU_DEVICE_ATTRIBUTE_CLOCK_RATE
	H2DGBps, D2HGBps float64
	// CopyGBps is a device-to-device copy's rate in bytes copied per
	// second (each byte is read and written once).
	CopyGBps float64
	// FLOPS is the rate the compute kernel runs at.
	FLOPS float64
	// NoJIT: LoadModule fails as a driver without its PTX compiler does.
	NoJIT bool
	// Peers is the P2P rate to each GPU (by bus id) reachable with peer
	// access; a GPU not listed cannot be a peer.
	Peers map[string]float64
	// HostPathGBps is a peer copy's rate without peer access (through
	// host memory, as the real driver silently does).
	HostPathGBps float64
	// Stall is real time each kernel launch takes besides its simulated
	// time: a probe that lasts, for tests of what happens meanwhile.
	Stall time.Duration
}

// Driver is a fake cuda.Driver over GPUs. KernelFLOPs says how many
// floating-point operations a launch does (the test knows its kernel).
type Driver struct {
	GPUs        []*GPU
	KernelFLOPs func(fn string, grid, block uint32, args []cuda.Arg) float64

	mu        sync.Mutex
	contexts  int   // retained, not released
	devBytes  int64 // allocated device memory
	hostBytes int64
	streams   int
	modules   int
	events    int
	nextPtr   uint64
}

var _ cuda.Driver = (*Driver)(nil)

// Leaks describes what is still allocated, retained or created: "" when
// nothing is.
func (d *Driver) Leaks() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.contexts == 0 && d.devBytes == 0 && d.hostBytes == 0 && d.streams == 0 && d.modules == 0 && d.events == 0 {
		return ""
	}
	return fmt.Sprintf("contexts %d, device bytes %d, host bytes %d, streams %d, modules %d, events %d",
		d.contexts, d.devBytes, d.hostBytes, d.streams, d.modules, d.events)
}

func (d *Driver) count(p *int, n int) {
	d.mu.Lock()
	*p += n
	d.mu.Unlock()
}

func (d *Driver) bytes(p *int64, n int64) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	*p += n
	d.nextPtr += 1 << 40
	return d.nextPtr
}

// Version is CUDA 12.4's.
func (d *Driver) Version() (int, error) { return 12040, nil }

// DeviceByBusID finds a GPU by its bus id.
func (d *Driver) DeviceByBusID(busID string) (cuda.Device, error) {
	for i, g := range d.GPUs {
		if g.BusID == busID {
			return cuda.Device(i), nil
		}
	}
	return 0, &cuda.Error{Call: "cuDeviceGetByPCIBusId", Result: 101, Name: "CUDA_ERROR_INVALID_DEVICE"}
}

func (d *Driver) gpu(dev cuda.Device) (*GPU, error) {
	if int(dev) < 0 || int(dev) >= len(d.GPUs) {
		return nil, &cuda.Error{Call: "cuDeviceGetAttribute", Result: 101, Name: "CUDA_ERROR_INVALID_DEVICE"}
	}
	return d.GPUs[dev], nil
}

// Attribute answers the attributes the probes read.
func (d *Driver) Attribute(dev cuda.Device, attr cuda.Attribute) (int, error) {
	g, err := d.gpu(dev)
	if err != nil {
		return 0, err
	}
	switch attr {
	case cuda.AttrMultiprocessorCount:
		return g.SMs, nil
	case cuda.AttrComputeCapMajor:
		return g.CCMajor, nil
	case cuda.AttrComputeCapMinor:
		return g.CCMinor, nil
	case cuda.AttrClockRateKHz:
		return g.ClockKHz, nil
	case cuda.AttrMaxThreadsPerSM:
		return 2048, nil
	}
	return 0, &cuda.Error{Call: "cuDeviceGetAttribute", Result: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
}

// CanAccessPeer says whether peer is listed in dev's Peers.
func (d *Driver) CanAccessPeer(dev, peer cuda.Device) (bool, error) {
	g, err := d.gpu(dev)
	if err != nil {
		return false, err
	}
	p, err := d.gpu(peer)
	if err != nil {
		return false, err
	}
	_, ok := g.Peers[p.BusID]
	return ok, nil
}

// PrimaryContext retains dev's context.
func (d *Driver) PrimaryContext(dev cuda.Device) (cuda.Context, error) {
	g, err := d.gpu(dev)
	if err != nil {
		return nil, err
	}
	d.count(&d.contexts, 1)
	return &Context{d: d, dev: dev, gpu: g, peers: map[*Context]bool{}}, nil
}

// Context is a fake context.
type Context struct {
	d     *Driver
	dev   cuda.Device
	gpu   *GPU
	mu    sync.Mutex
	peers map[*Context]bool
	alloc map[uint64]int64
}

func (c *Context) Device() cuda.Device { return c.dev }

func (c *Context) remember(p uint64, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alloc == nil {
		c.alloc = map[uint64]int64{}
	}
	c.alloc[p] = n
}

func (c *Context) forget(call string, p uint64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.alloc[p]
	if !ok {
		return 0, &cuda.Error{Call: call, Result: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
	}
	delete(c.alloc, p)
	return n, nil
}

func (c *Context) MemAlloc(bytes int64) (cuda.DevicePtr, error) {
	p := c.d.bytes(&c.d.devBytes, bytes)
	c.remember(p, bytes)
	return cuda.DevicePtr(p), nil
}

func (c *Context) MemFree(p cuda.DevicePtr) error {
	n, err := c.forget("cuMemFree_v2", uint64(p))
	if err == nil {
		c.d.bytes(&c.d.devBytes, -n)
	}
	return err
}

func (c *Context) HostAlloc(bytes int64) (cuda.HostPtr, error) {
	p := c.d.bytes(&c.d.hostBytes, bytes)
	c.remember(p, bytes)
	return cuda.HostPtr(p), nil
}

func (c *Context) HostFree(p cuda.HostPtr) error {
	n, err := c.forget("cuMemFreeHost", uint64(p))
	if err == nil {
		c.d.bytes(&c.d.hostBytes, -n)
	}
	return err
}

// LoadModule fails as the real driver does without its JIT (NoJIT).
func (c *Context) LoadModule(ptx string) (cuda.Module, error) {
	if c.gpu.NoJIT {
		return nil, fmt.Errorf("%w (%w)", cuda.ErrNoJIT, &cuda.Error{Call: "cuModuleLoadData", Result: 221, Name: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"})
	}
	if ptx == "" {
		return nil, &cuda.Error{Call: "cuModuleLoadData", Result: 218, Name: "CUDA_ERROR_INVALID_PTX"}
	}
	c.d.count(&c.d.modules, 1)
	return &module{d: c.d}, nil
}

// EnablePeerAccess lets c copy to and from peer directly.
func (c *Context) EnablePeerAccess(peer cuda.Context) error {
	p := peer.(*Context)
	if _, ok := c.gpu.Peers[p.gpu.BusID]; !ok {
		return fmt.Errorf("%w (%w)", cuda.ErrPeerUnsupported, &cuda.Error{Call: "cuCtxEnablePeerAccess", Result: 217, Name: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"})
	}
	c.mu.Lock()
	c.peers[p] = true
	c.mu.Unlock()
	return nil
}

func (c *Context) peerEnabled(p *Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peers[p]
}

func (c *Context) NewStream() (cuda.Stream, error) {
	c.d.count(&c.d.streams, 1)
	return &Stream{c: c}, nil
}

// Release releases the context; memory it still holds counts as leaked.
func (c *Context) Release() error {
	c.d.count(&c.d.contexts, -1)
	return nil
}

type module struct{ d *Driver }

func (m *module) Function(name string) (cuda.Function, error) { return function(name), nil }
func (m *module) Unload() error                               { m.d.count(&m.d.modules, -1); return nil }

type function string

func (f function) Name() string { return string(f) }

// Stream is a fake stream: its clock is the simulated time its work took.
type Stream struct {
	c     *Context
	mu    sync.Mutex
	clock time.Duration
}

func (s *Stream) advance(bytes int64, gbps float64) error {
	if gbps <= 0 {
		return errors.New("cudafake: a rate of 0 for this copy")
	}
	s.mu.Lock()
	s.clock += time.Duration(float64(bytes) / (gbps * 1e9) * float64(time.Second))
	s.mu.Unlock()
	return nil
}

func (s *Stream) CopyHtoD(dst cuda.DevicePtr, src cuda.HostPtr, bytes int64) error {
	return s.advance(bytes, s.c.gpu.H2DGBps)
}

func (s *Stream) CopyDtoH(dst cuda.HostPtr, src cuda.DevicePtr, bytes int64) error {
	return s.advance(bytes, s.c.gpu.D2HGBps)
}

func (s *Stream) CopyDtoD(dst, src cuda.DevicePtr, bytes int64) error {
	return s.advance(bytes, s.c.gpu.CopyGBps)
}

// CopyPeer copies at the peer rate when either context enabled access to
// the other, else at HostPathGBps.
func (s *Stream) CopyPeer(dst cuda.DevicePtr, dstCtx cuda.Context, src cuda.DevicePtr, srcCtx cuda.Context, bytes int64) error {
	dc, sc := dstCtx.(*Context), srcCtx.(*Context)
	if dc.peerEnabled(sc) || sc.peerEnabled(dc) {
		return s.advance(bytes, sc.gpu.Peers[dc.gpu.BusID])
	}
	return s.advance(bytes, s.c.gpu.HostPathGBps)
}

// Launch advances the clock by the kernel's FLOPs at the GPU's rate.
func (s *Stream) Launch(fn cuda.Function, gridX, blockX uint32, args ...cuda.Arg) error {
	if s.c.d.KernelFLOPs == nil || s.c.gpu.FLOPS <= 0 {
		return errors.New("cudafake: no FLOP rate for kernels")
	}
	time.Sleep(s.c.gpu.Stall)
	flops := s.c.d.KernelFLOPs(fn.Name(), gridX, blockX, args)
	s.mu.Lock()
	s.clock += time.Duration(flops / s.c.gpu.FLOPS * float64(time.Second))
	s.mu.Unlock()
	return nil
}

func (s *Stream) Record() (cuda.Event, error) {
	s.c.d.count(&s.c.d.events, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return &event{d: s.c.d, at: s.clock}, nil
}

func (s *Stream) Synchronize() error { return nil }

func (s *Stream) Destroy() error { s.c.d.count(&s.c.d.streams, -1); return nil }

type event struct {
	d  *Driver
	at time.Duration
}

func (e *event) Since(start cuda.Event) (time.Duration, error) { return e.at - start.(*event).at, nil }
func (e *event) Destroy() error                                { e.d.count(&e.d.events, -1); return nil }
