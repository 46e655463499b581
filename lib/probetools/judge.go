package probetools

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gpuprep/lib/probe"
)

// The codes of the tools' findings (alongside probe's codes in the
// verdict).
const (
	// CodeDCGMDiagFailed: a test of dcgmi diag failed (one finding per
	// test and GPU).
	CodeDCGMDiagFailed = "DCGM_DIAG_FAILED"
	// CodeAllReduceSlow: all_reduce_perf's bus bandwidth at 16 GiB is
	// below Floors.AllReduceGBps.
	CodeAllReduceSlow = "ALLREDUCE_SLOW"
	// CodeAllReduceWrong: all_reduce_perf found wrong values ("Out of
	// bounds values" not 0).
	CodeAllReduceWrong = "ALLREDUCE_WRONG"
	// CodeIBLoopbackSlow: an HCA's ib_write_bw loopback is below
	// Floors.IBGBps.
	CodeIBLoopbackSlow = "IB_LOOPBACK_SLOW"
	// CodeToolFailed: a tool could not run, timed out or gave no result;
	// never a hardware verdict by itself (GPU -1).
	CodeToolFailed = "TOOL_FAILED"
)

// Floors are what the tools' measurements are held to; 0: not judged.
type Floors struct {
	// AllReduceGBps is the least all_reduce_perf bus bandwidth at 16 GiB
	// (GB/s, out of place).
	AllReduceGBps float64 `json:"allreduce_gbps,omitempty"`
	// IBGBps is the least ib_write_bw loopback bandwidth of each HCA
	// (GB/s; Gb/s divided by 8).
	IBGBps float64 `json:"ib_gbps,omitempty"`
}

// Judge lists what results fail: each failed DCGM test
// (DCGM_DIAG_FAILED, on its GPU, -1 when it names none), all_reduce_perf
// below its floor (ALLREDUCE_SLOW) or with wrong values
// (ALLREDUCE_WRONG), an HCA's loopback below its floor
// (IB_LOOPBACK_SLOW), and each tool that could not run (TOOL_FAILED).
// Findings not of one GPU have GPU -1; BusID is left to the caller.
func Judge(results []Result, floors Floors) []probe.Finding {
	var out []probe.Finding
	for _, r := range results {
		if r.Error != "" {
			out = append(out, probe.Finding{Code: CodeToolFailed, GPU: -1, Reason: toolName(r) + ": " + r.Error})
			continue
		}
		switch r.Tool {
		case DCGMI:
			out = append(out, judgeDCGM(r)...)
		case AllReducePerf:
			out = append(out, judgeAllReduce(r, floors)...)
		case IBWriteBW:
			out = append(out, judgeIB(r, floors)...)
		}
	}
	return out
}

// toolName is "<tool> <version>", or the tool alone when no version.
func toolName(r Result) string {
	return strings.TrimSpace(r.Tool + " " + r.Version)
}

// failedGPURE reads the GPU of a Result.Failed entry.
var failedGPURE = regexp.MustCompile(`^GPU (\d+): `)

// judgeDCGM makes one finding of each failed DCGM test.
func judgeDCGM(r Result) []probe.Finding {
	var out []probe.Finding
	for _, f := range r.Failed {
		gpu := -1
		if m := failedGPURE.FindStringSubmatch(f); m != nil {
			gpu, _ = strconv.Atoi(m[1])
		}
		out = append(out, probe.Finding{Code: CodeDCGMDiagFailed, GPU: gpu,
			Reason: fmt.Sprintf("%s diag -r 2: %s", toolName(r), f)})
	}
	if len(out) == 0 && r.Pass != nil && !*r.Pass {
		out = append(out, probe.Finding{Code: CodeDCGMDiagFailed, GPU: -1, Reason: toolName(r) + " diag -r 2 failed"})
	}
	return out
}

// judgeAllReduce holds all_reduce_perf's 16 GiB bus bandwidth to its
// floor and its verdict on the values.
func judgeAllReduce(r Result, floors Floors) []probe.Finding {
	var out []probe.Finding
	if r.Pass != nil && !*r.Pass {
		out = append(out, probe.Finding{Code: CodeAllReduceWrong, GPU: -1,
			Reason: toolName(r) + " found wrong values (Out of bounds values not 0)"})
	}
	bw, ok := r.Values["busbw_gbps_16GiB"]
	if ok && floors.AllReduceGBps > 0 && bw < floors.AllReduceGBps {
		out = append(out, probe.Finding{Code: CodeAllReduceSlow, GPU: -1, Measured: bw, Floor: floors.AllReduceGBps, Unit: "GB/s",
			Reason: fmt.Sprintf("%s all-reduce bus bandwidth at 16 GiB %.1f GB/s, below %.1f GB/s",
				toolName(r), bw, floors.AllReduceGBps)})
	}
	return out
}

// judgeIB holds each HCA's loopback bandwidth to its floor.
func judgeIB(r Result, floors Floors) []probe.Finding {
	if floors.IBGBps <= 0 {
		return nil
	}
	var keys []string
	for k := range r.Values {
		if strings.HasPrefix(k, "bw_gbps_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []probe.Finding
	for _, k := range keys {
		if bw := r.Values[k]; bw < floors.IBGBps {
			hca := strings.TrimPrefix(k, "bw_gbps_")
			out = append(out, probe.Finding{Code: CodeIBLoopbackSlow, GPU: -1, Measured: bw, Floor: floors.IBGBps, Unit: "GB/s",
				Reason: fmt.Sprintf("%s loopback on %s %.1f GB/s (%.1f Gb/s), below %.1f GB/s",
					toolName(r), hca, bw, bw*8, floors.IBGBps)})
		}
	}
	return out
}
