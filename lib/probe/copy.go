package probe

import (
	"fmt"

	"gpuprep/lib/cuda"
)

// hostCopies measures host-to-device and device-to-host bandwidth of one
// GPU from page-locked memory on its NUMA node (BindMemory while it is
// allocated: cuMemHostAlloc places and pins the pages then).
func hostCopies(o Options, g *gpuRun) {
	fail := func(err error) {
		g.res.H2D.Error = err.Error()
		g.res.D2H.Error = err.Error()
	}
	s, err := g.ctx.NewStream()
	if err != nil {
		fail(err)
		return
	}
	defer s.Destroy()
	host, node, err := pinnedOnNode(o, g)
	if err != nil {
		fail(err)
		return
	}
	defer g.ctx.HostFree(host)
	dev, err := g.ctx.MemAlloc(o.HostBytes)
	if err != nil {
		fail(fmt.Errorf("device buffer: %w", err))
		return
	}
	defer g.ctx.MemFree(dev)
	sample := sampler(o, g)
	n := o.HostBytes
	g.res.H2D = measureCopy(s, o, sample, n, 1, func() error { return s.CopyHtoD(dev, host, n) })
	g.res.D2H = measureCopy(s, o, sample, n, 1, func() error { return s.CopyDtoH(host, dev, n) })
	g.res.H2D.HostNUMANode, g.res.D2H.HostNUMANode = node, node
}

// pinnedOnNode allocates the pinned buffer under the GPU's NUMA node's
// memory policy, and says which node its first page is on (nil when not
// known).
func pinnedOnNode(o Options, g *gpuRun) (cuda.HostPtr, *int, error) {
	if o.BindMemory != nil && g.res.NUMANode >= 0 {
		restore, err := o.BindMemory(g.res.NUMANode)
		if err != nil {
			return 0, nil, fmt.Errorf("memory policy for NUMA node %d: %w", g.res.NUMANode, err)
		}
		defer restore()
	}
	host, err := g.ctx.HostAlloc(o.HostBytes)
	if err != nil {
		return 0, nil, fmt.Errorf("pinned host buffer: %w", err)
	}
	if o.MemoryNode == nil {
		return host, nil, nil
	}
	node, err := o.MemoryNode(uintptr(host))
	if err != nil {
		return host, nil, nil
	}
	return host, &node, nil
}

// deviceCopy measures device memory bandwidth: a copy between two buffers
// in the GPU's memory, each byte read and written.
func deviceCopy(o Options, g *gpuRun) {
	s, err := g.ctx.NewStream()
	if err != nil {
		g.res.D2D.Error = err.Error()
		return
	}
	defer s.Destroy()
	n := o.DeviceBytes
	src, err := g.ctx.MemAlloc(n)
	if err != nil {
		g.res.D2D.Error = fmt.Sprintf("device buffer: %v", err)
		return
	}
	defer g.ctx.MemFree(src)
	dst, err := g.ctx.MemAlloc(n)
	if err != nil {
		g.res.D2D.Error = fmt.Sprintf("device buffer: %v", err)
		return
	}
	defer g.ctx.MemFree(dst)
	g.res.D2D = measureCopy(s, o, sampler(o, g), n, 2, func() error { return s.CopyDtoD(dst, src, n) })
}

// measureCopy times op (a copy of bytes, counted count times) and makes
// the measurement, or one that says why there is none.
func measureCopy(s cuda.Stream, o Options, sample func() (Sample, error), bytes int64, count int, op func() error) Measurement {
	t, err := timed(s, o.Span, sample, op)
	if err != nil {
		return Measurement{Error: err.Error()}
	}
	return t.bandwidth(bytes, count)
}

// sampler reads g's GPU through o.Sample; nil when there is none.
func sampler(o Options, g *gpuRun) func() (Sample, error) {
	if o.Sample == nil {
		return nil
	}
	return func() (Sample, error) { return o.Sample(g.res.Index) }
}
