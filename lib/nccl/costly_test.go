package nccl

import (
	"strings"
	"testing"
)

func TestCheckEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string // fragments of the one finding; nil: none
	}{
		{map[string]string{"NCCL_P2P_DISABLE": "1"}, []string{"NCCL_P2P_DISABLE=1", "P2P", "327 to 28 GB/s"}},
		{map[string]string{"NCCL_P2P_DISABLE": "0x1"}, []string{"NCCL_P2P_DISABLE=0x1"}},
		{map[string]string{"NCCL_P2P_DISABLE": "0"}, nil},
		{map[string]string{"NCCL_P2P_DISABLE": "2"}, nil}, // ncclGetLevel: only 1 disables
		{map[string]string{"NCCL_P2P_LEVEL": "LOC"}, []string{"NCCL_P2P_LEVEL=LOC", "P2P between GPUs is off"}},
		{map[string]string{"NCCL_P2P_LEVEL": "0"}, []string{"NCCL_P2P_LEVEL=0"}},
		{map[string]string{"NCCL_P2P_LEVEL": "NVL"}, nil},
		{map[string]string{"NCCL_P2P_LEVEL": "loc"}, nil}, // strcmp: NCCL ignores it
		{map[string]string{"NCCL_P2P_LEVEL": "SYS"}, nil},
		{map[string]string{"NCCL_SHM_DISABLE": "1"}, []string{"shared-memory"}},
		{map[string]string{"NCCL_SHM_DISABLE": "0"}, nil},
		{map[string]string{"NCCL_IB_DISABLE": "1"}, []string{"InfiniBand/RoCE transport is off", "TCP sockets"}},
		{map[string]string{"NCCL_IB_DISABLE": "2"}, []string{"NCCL_IB_DISABLE=2"}}, // any non-zero
		{map[string]string{"NCCL_IB_DISABLE": "0"}, nil},
		{map[string]string{"NCCL_IB_DISABLE": "no"}, nil}, // strtoll: 0
		{map[string]string{"NCCL_NET": "socket"}, []string{"TCP sockets"}},
		{map[string]string{"NCCL_NET": "IB"}, nil},
		{map[string]string{"NCCL_NET_GDR_LEVEL": "LOC"}, []string{"GPUDirect RDMA is off", "staged through host memory"}},
		{map[string]string{"NCCL_NET_GDR_LEVEL": "0"}, []string{"GPUDirect RDMA is off"}},
		{map[string]string{"NCCL_NET_GDR_LEVEL": "PHB"}, nil},
		{map[string]string{"NCCL_NET_GDR_LEVEL": "2"}, nil},
		{map[string]string{"NCCL_NET_GDR_READ": "0"}, []string{"GPUDirect RDMA reads are off"}},
		{map[string]string{"NCCL_NET_GDR_READ": "1"}, nil},
		{map[string]string{"NCCL_NVLS_ENABLE": "0"}, []string{"NVLink SHARP"}},
		{map[string]string{"NCCL_NVLS_ENABLE": "1"}, nil},
		{map[string]string{"NCCL_ALGO": "Ring"}, []string{"NCCL_ALGO=Ring", "algorithm"}},
		{map[string]string{"NCCL_ALGO": "^NVLS"}, []string{"NCCL_ALGO=^NVLS"}},
		{map[string]string{"NCCL_PROTO": "Simple"}, []string{"NCCL_PROTO=Simple", "protocol"}},
		{map[string]string{"NCCL_MAX_NCHANNELS": "2"}, []string{"at most 2 channels"}},
		{map[string]string{"NCCL_MAX_NCHANNELS": "32"}, nil},
		{map[string]string{"NCCL_MAX_NCHANNELS": "16"}, nil},
		{map[string]string{"NCCL_MAX_NRINGS": "4"}, []string{"at most 4 channels"}},
		{map[string]string{"NCCL_MAX_CTAS": "8"}, []string{"at most 8 CTAs"}},
		{map[string]string{"NCCL_MAX_CTAS": "0"}, nil},
		{map[string]string{"NCCL_DEBUG": "TRACE"}, []string{"tracing"}},
		{map[string]string{"NCCL_DEBUG": "trace"}, []string{"tracing"}},
		{map[string]string{"NCCL_DEBUG": "INFO"}, nil},
		{map[string]string{"NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "ALL"}, nil},
		{map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,COLL"}, []string{"every collective is logged"}},
		{map[string]string{"NCCL_DEBUG": "info", "NCCL_DEBUG_SUBSYS": "all"}, []string{"every collective is logged"}},
		{map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "^COLL"}, nil},
		{map[string]string{"NCCL_CHECKS_DISABLE": "1"}, nil},
		{map[string]string{"CUDA_LAUNCH_BLOCKING": "1"}, []string{"CUDA_LAUNCH_BLOCKING=1", "waits"}},
		{map[string]string{"CUDA_LAUNCH_BLOCKING": "0"}, nil},
		{map[string]string{"NCCL_ALGO": "Ring Tree"}, []string{`NCCL_ALGO="Ring Tree"`}},
	} {
		got := only(checkEnv(envMap(tc.env)), "nccl_env")
		if tc.want == nil {
			if len(got) != 0 {
				t.Errorf("%v: want no finding, got %q", tc.env, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%v: want one finding, got %q", tc.env, got)
			continue
		}
		for _, f := range append(tc.want, "costs bandwidth") {
			if !strings.Contains(got[0], f) {
				t.Errorf("%v: %q lacks %q", tc.env, got[0], f)
			}
		}
	}
}

// Every finding names a cost, and the table names each variable once.
func TestCostlyTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range costlyVars {
		if seen[c.name] || c.cost == "" || c.bad == nil {
			t.Errorf("%s: duplicate, or no cost or predicate", c.name)
		}
		seen[c.name] = true
	}
}
