package probetools

import (
	"reflect"
	"testing"

	"gpuprep/lib/probe"
)

func TestJudge(t *testing.T) {
	results := []Result{
		{Tool: DCGMI, Version: "4.2.3", Pass: ptr(false), Failed: []string{
			"GPU 5: pcie: GPU 5 is running at PCI link generation 3",
			"memory: plugin aborted",
		}},
		{Tool: AllReducePerf, Version: "2.17.6", Pass: ptr(true),
			Values: map[string]float64{"busbw_gbps_1GiB": 300, "busbw_gbps_16GiB": 350.5}},
		{Tool: AllReducePerf, Pass: ptr(false), Values: map[string]float64{"busbw_gbps_16GiB": 46.71}},
		{Tool: IBWriteBW, Version: "6.29", Values: map[string]float64{"bw_gbit_mlx5_0": 364.87, "bw_gbps_mlx5_0": 45.60875}},
		{Tool: IBWriteBW, Version: "6.29", Values: map[string]float64{"bw_gbit_mlx5_1": 160, "bw_gbps_mlx5_1": 20}},
		{Tool: IBWriteBW, Version: "6.29", Error: "ib_write_bw client on mlx5_2: exit status 1: Couldn't connect to localhost:18602"},
		{Tool: DCGMI, Error: "dcgmi diag: timed out after 10m0s"},
	}
	got := Judge(results, Floors{AllReduceGBps: 400, IBGBps: 40})
	want := []probe.Finding{
		{Code: CodeDCGMDiagFailed, GPU: 5, Reason: "dcgmi 4.2.3 diag -r 2: GPU 5: pcie: GPU 5 is running at PCI link generation 3"},
		{Code: CodeDCGMDiagFailed, GPU: -1, Reason: "dcgmi 4.2.3 diag -r 2: memory: plugin aborted"},
		{Code: CodeAllReduceSlow, GPU: -1, Measured: 350.5, Floor: 400, Unit: "GB/s",
			Reason: "all_reduce_perf 2.17.6 all-reduce bus bandwidth at 16 GiB 350.5 GB/s, below 400.0 GB/s"},
		{Code: CodeAllReduceWrong, GPU: -1, Reason: "all_reduce_perf found wrong values (Out of bounds values not 0)"},
		{Code: CodeAllReduceSlow, GPU: -1, Measured: 46.71, Floor: 400, Unit: "GB/s",
			Reason: "all_reduce_perf all-reduce bus bandwidth at 16 GiB 46.7 GB/s, below 400.0 GB/s"},
		{Code: CodeIBLoopbackSlow, GPU: -1, Measured: 20, Floor: 40, Unit: "GB/s",
			Reason: "ib_write_bw 6.29 loopback on mlx5_1 20.0 GB/s (160.0 Gb/s), below 40.0 GB/s"},
		{Code: CodeToolFailed, GPU: -1, Reason: "ib_write_bw 6.29: ib_write_bw client on mlx5_2: exit status 1: Couldn't connect to localhost:18602"},
		{Code: CodeToolFailed, GPU: -1, Reason: "dcgmi: dcgmi diag: timed out after 10m0s"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Judge:\n got %+v\nwant %+v", got, want)
	}

	// No floors: only DCGM's verdicts, wrong values and tools that failed.
	got = Judge(results, Floors{})
	var codes []string
	for _, f := range got {
		codes = append(codes, f.Code)
	}
	wantCodes := []string{CodeDCGMDiagFailed, CodeDCGMDiagFailed, CodeAllReduceWrong, CodeToolFailed, CodeToolFailed}
	if !reflect.DeepEqual(codes, wantCodes) {
		t.Errorf("codes without floors %q, want %q", codes, wantCodes)
	}
	if got := Judge([]Result{{Tool: DCGMI, Pass: ptr(true)}}, Floors{}); got != nil {
		t.Errorf("a pass: %+v", got)
	}
}
