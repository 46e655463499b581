package probe

import (
	"errors"
	"fmt"
	"time"

	"gpuprep/lib/cuda"
)

// unknownPrefix starts the error of a probe that could not be run for a
// reason that is not the GPU's (the driver's PTX compiler is missing): its
// value is unknown, not failed.
const unknownPrefix = "unknown: "

const (
	// computeBlock is the kernel's threads per block.
	computeBlock = 256
	// calibrationIters is the first launch's iterations: short, to time.
	calibrationIters = 256
)

// compute runs the FMA kernel on every SM and reports its FLOP/s, the SM
// clock it ran at and the ratio to the GPU's FP32 peak at that clock. A
// driver without its PTX compiler leaves it unknown, saying why.
func compute(o Options, g *gpuRun) {
	c := &g.res.Compute
	if err := computeShape(o, g, c); err != nil {
		c.Error = err.Error()
		return
	}
	mod, err := g.ctx.LoadModule(kernelPTX)
	if errors.Is(err, cuda.ErrNoJIT) {
		c.Error = unknownPrefix + err.Error()
		return
	} else if err != nil {
		c.Error = fmt.Sprintf("loading the compute kernel: %v", err)
		return
	}
	defer mod.Unload()
	if err := runKernel(o, g, mod, c); err != nil {
		c.Error = err.Error()
	}
}

// computeShape reads the GPU's SMs, FP32 lanes and highest SM clock.
func computeShape(o Options, g *gpuRun, c *Compute) error {
	var clockKHz int
	for _, a := range []struct {
		attr cuda.Attribute
		to   *int
	}{{cuda.AttrMultiprocessorCount, &c.SMs}, {cuda.AttrComputeCapMajor, &c.CCMajor},
		{cuda.AttrComputeCapMinor, &c.CCMinor}, {cuda.AttrClockRateKHz, &clockKHz}} {
		v, err := o.Driver.Attribute(g.dev, a.attr)
		if err != nil {
			return fmt.Errorf("device attribute %d: %w", a.attr, err)
		}
		*a.to = v
	}
	c.Lanes = fp32Lanes(c.CCMajor, c.CCMinor)
	if c.Lanes > 0 {
		c.PeakMaxClock = peakTFLOPS(c.SMs, c.Lanes, float64(clockKHz)/1000)
	}
	return nil
}

// runKernel launches the kernel on a grid that fills every SM: once short
// to learn its speed, then long enough for a launch to take about a
// quarter of the span, timed as many times as fill the span.
func runKernel(o Options, g *gpuRun, mod cuda.Module, c *Compute) error {
	fn, err := mod.Function(kernelName)
	if err != nil {
		return err
	}
	grid := uint32(c.SMs * 2048 / computeBlock)
	out, err := g.ctx.MemAlloc(int64(grid) * computeBlock * 4)
	if err != nil {
		return fmt.Errorf("kernel output buffer: %w", err)
	}
	defer g.ctx.MemFree(out)
	s, err := g.ctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	launch := func(iters uint32) func() error {
		return func() error { return s.Launch(fn, grid, computeBlock, out, iters) }
	}
	cal, err := timeOps(s, 1, 0, nil, launch(calibrationIters))
	if err != nil {
		return err
	}
	iters := scaleIters(calibrationIters, cal.elapsed, o.Span/4)
	t, err := timed(s, o.Span, sampler(o, g), launch(iters))
	if err != nil {
		return err
	}
	flops := KernelFLOPs(grid, computeBlock, iters) * float64(t.n)
	c.TFLOPS = flops / t.elapsed.Seconds() / 1e12
	c.Seconds, c.During = t.elapsed.Seconds(), t.during
	if c.Lanes > 0 && t.during.SMClockMHz > 0 {
		c.PeakAtClock = peakTFLOPS(c.SMs, c.Lanes, float64(t.during.SMClockMHz))
		c.Ratio = c.TFLOPS / c.PeakAtClock
	}
	return nil
}

// scaleIters is the iterations that make a launch take about want, given
// that iters took took.
func scaleIters(iters uint32, took, want time.Duration) uint32 {
	scaled := float64(iters) * float64(want) / float64(took)
	return uint32(min(max(scaled, float64(iters)), 1<<30))
}
