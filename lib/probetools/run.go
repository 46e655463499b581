package probetools

import (
	"gpuprep/lib/probe"

	"context"
	"log/slog"
	"time"
)

// Default timeouts, per tool (per HCA for ib_write_bw).
const (
	DefaultDCGMTimeout = 10 * time.Minute
	DefaultTimeout     = 5 * time.Minute
)

// DefaultIBPort is the first TCP port the ib_write_bw loopbacks use (HCA i
// uses DefaultIBPort+i); perftest's own default, 18515, is left to others.
const DefaultIBPort = 18600

// Options are what Run needs.
type Options struct {
	// GPUs is the number of GPUs all_reduce_perf runs across (-g); 0:
	// all_reduce_perf is not run.
	GPUs int
	// HCAs are the RDMA devices to loop ib_write_bw back on ("mlx5_0"),
	// one at a time; none: ib_write_bw is not run.
	HCAs []string
	// Timeout bounds each tool's run (each HCA's, for ib_write_bw); 0:
	// DefaultDCGMTimeout for dcgmi, DefaultTimeout for the others.
	Timeout time.Duration
	// IBPort is the first port of the ib_write_bw loopbacks (0:
	// DefaultIBPort).
	IBPort int
	Log    *slog.Logger
}

// Result is one tool's run: probe.ToolResult, which the verdict keeps.
type Result = probe.ToolResult

// Run runs each of tools that o gives it something to do (dcgmi always;
// all_reduce_perf when o.GPUs > 0; ib_write_bw when o.HCAs are given), one
// after the other, in the order of Names, and returns their Results. A
// tool that fails gives a Result with Error; the others still run. When
// ctx ends, the tool running is ended and the rest are not started.
func Run(ctx context.Context, tools []Tool, o Options) []Result {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.IBPort == 0 {
		o.IBPort = DefaultIBPort
	}
	var out []Result
	for _, name := range Names {
		t, ok := toolNamed(tools, name)
		if !ok || ctx.Err() != nil {
			continue
		}
		rs := runOne(ctx, t, o)
		for _, r := range rs {
			logResult(o.Log, r)
		}
		out = append(out, rs...)
	}
	return out
}

// runOne runs one tool, or nothing when o gives it nothing to do.
func runOne(ctx context.Context, t Tool, o Options) []Result {
	switch t.Name {
	case DCGMI:
		return []Result{runDCGM(ctx, t, o.timeoutFor(DCGMI))}
	case AllReducePerf:
		if o.GPUs <= 0 {
			o.Log.Info("all_reduce_perf not run: no GPUs")
			return nil
		}
		return []Result{runAllReduce(ctx, t, o.GPUs, o.timeoutFor(AllReducePerf))}
	case IBWriteBW:
		var out []Result
		for i, hca := range o.HCAs {
			if ctx.Err() != nil {
				break
			}
			out = append(out, runIBLoopback(ctx, t, hca, o.IBPort+i, o.timeoutFor(IBWriteBW)))
		}
		return out
	}
	return nil
}

// timeoutFor is the time a run of tool may take.
func (o Options) timeoutFor(tool string) time.Duration {
	switch {
	case o.Timeout > 0:
		return o.Timeout
	case tool == DCGMI:
		return DefaultDCGMTimeout
	}
	return DefaultTimeout
}

// toolNamed is the first of tools named name.
func toolNamed(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// logResult logs one Result: a warning when it failed or could not run.
func logResult(log *slog.Logger, r Result) {
	attrs := []any{"tool", r.Tool, "version", r.Version, "args", r.Args, "seconds", r.Seconds}
	for k, v := range r.Values {
		attrs = append(attrs, k, v)
	}
	switch {
	case r.Error != "":
		log.Warn("probe tool could not run", append(attrs, "error", r.Error)...)
	case r.Pass != nil && !*r.Pass:
		log.Warn("probe tool failed", append(attrs, "failed", r.Failed)...)
	default:
		log.Info("probe tool ran", attrs...)
	}
}

// boolp is a pointer to b.
func boolp(b bool) *bool { return &b }
