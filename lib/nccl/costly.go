package nccl

import (
	"fmt"
	"strings"

	"gpuprep/lib/srunconf"
)

// costly is one inherited variable that costs bandwidth when set to
// certain values.
type costly struct {
	name string
	// bad says whether the value v (non-empty) switches something off, and
	// if so what, in a few words; env reads the rest of the environment.
	bad func(v string, env func(string) string) (what string, ok bool)
	// cost is what the user loses, as measured or published.
	cost string
}

// costlyVars is the nccl_env table. Values are read the way NCCL reads
// them: integer parameters with strtoll base 0 (ncclLoadParam, so "abc"
// is 0), NCCL_*_DISABLE with strtol == 1, path levels (NCCL_P2P_LEVEL,
// NCCL_NET_GDR_LEVEL) by case-sensitive name or legacy number
// (ncclGetLevel: 0 is LOC).
//
// Left out on purpose: NCCL_CHECKS_DISABLE (setting it skips argument
// checks: it saves time, it never costs); NCCL_P2P_LEVEL other than LOC
// (it narrows P2P, which may be the site's intent); NCCL_DEBUG=INFO alone
// (a few lines at init).
var costlyVars = []costly{
	{"NCCL_P2P_DISABLE", intIs(1, "P2P (NVLink and PCIe peer-to-peer) between GPUs is off"),
		"GPUs exchange data through host memory: on the 2x H200 test node a 1 GiB all_reduce drops from 327 to 28 GB/s bus bandwidth"},
	{"NCCL_P2P_LEVEL", levelLOC("P2P between GPUs is off (level LOC)"),
		"GPUs exchange data through host memory instead of NVLink or PCIe peer-to-peer (on the 2x H200 test node, 327 to 28 GB/s for a 1 GiB all_reduce)"},
	{"NCCL_SHM_DISABLE", intNonZero("the shared-memory transport is off"),
		"GPUs that cannot use P2P go through the network (or sockets) instead of host shared memory"},
	{"NCCL_IB_DISABLE", intNonZero("the InfiniBand/RoCE transport is off"),
		"traffic between nodes falls back to TCP sockets, a small fraction of the HCAs' bandwidth"},
	{"NCCL_NET", equalFold("Socket", "the network transport is forced to TCP sockets"),
		"traffic between nodes uses TCP sockets instead of InfiniBand/RoCE, a small fraction of the HCAs' bandwidth"},
	{"NCCL_NET_GDR_LEVEL", levelLOC("GPUDirect RDMA is off (level LOC)"),
		"every transfer between nodes is staged through host memory: lower bandwidth, higher latency, more CPU"},
	{"NCCL_NET_GDR_READ", intIs(0, "GPUDirect RDMA reads are off"),
		"sends to other nodes are staged through host memory"},
	{"NCCL_NVLS_ENABLE", intIs(0, "NVLink SHARP is off"),
		"on NVSwitch systems all_reduce loses the switch's in-network reduction"},
	{"NCCL_ALGO", anyValue("the collective algorithms are forced"),
		"NCCL no longer picks the fastest algorithm per message size and node count"},
	{"NCCL_PROTO", anyValue("the protocols are forced"),
		"NCCL no longer picks the fastest protocol per message size (small messages pay Simple's latency, large ones LL's half bandwidth)"},
	{"NCCL_MAX_NCHANNELS", intBelow(minChannels, "NCCL may use at most %d channels"), channelCost},
	{"NCCL_MAX_NRINGS", intBelow(minChannels, "NCCL may use at most %d channels (old name of NCCL_MAX_NCHANNELS)"), channelCost},
	{"NCCL_MAX_CTAS", intBelow(minChannels, "NCCL may use at most %d CTAs (channels)"), channelCost},
	{"NCCL_DEBUG", debugPerCall, "a log line per collective call on every rank"},
	{"CUDA_LAUNCH_BLOCKING", intIs(1, "every CUDA kernel launch waits for the kernel to finish"),
		"no overlap of communication with compute, nor of one launch with the next"},
}

// minChannels: NVLink and NVSwitch GPUs (A100, H100, H200, B200) need 16
// or more channels (each one CTA on one SM) to reach NVLink bus
// bandwidth; NCCL picks that many by itself there.
const minChannels = 16

const channelCost = "each channel is one SM's share of the bandwidth: NVLink GPUs need 16 or more to reach full bus bandwidth"

// checkEnv is the nccl_env check: one finding per costly variable set.
func checkEnv(env func(string) string) []Finding {
	var out []Finding
	for _, c := range costlyVars {
		v := env(c.name)
		if v == "" {
			continue
		}
		if what, ok := c.bad(v, env); ok {
			out = append(out, Finding{Check: "nccl_env", Msg: fmt.Sprintf("%s=%s: %s; costs bandwidth: %s", c.name, srunconf.Show(v), what, c.cost)})
		}
	}
	return out
}

func intIs(want int64, what string) func(string, func(string) string) (string, bool) {
	return func(v string, _ func(string) string) (string, bool) {
		n, ok := strtol(v)
		return what, ok && n == want
	}
}

func intNonZero(what string) func(string, func(string) string) (string, bool) {
	return func(v string, _ func(string) string) (string, bool) {
		n, ok := strtol(v) // overflow: NCCL keeps the default, 0
		return what, ok && n != 0
	}
}

// intBelow: a value from 1 to below; what holds one %d for it. 0 and
// negative values are NCCL's "not set".
func intBelow(below int64, what string) func(string, func(string) string) (string, bool) {
	return func(v string, _ func(string) string) (string, bool) {
		n, ok := strtol(v)
		return fmt.Sprintf(what, n), ok && n >= 1 && n < below
	}
}

// levelLOC: ncclGetLevel's LOC, by name (case-sensitive) or by legacy
// number 0 (strtol of a value starting with a digit).
func levelLOC(what string) func(string, func(string) string) (string, bool) {
	return func(v string, _ func(string) string) (string, bool) {
		if v == "LOC" {
			return what, true
		}
		if v[0] >= '0' && v[0] <= '9' {
			n, ok := strtol(v)
			return what, ok && n == 0
		}
		return what, false
	}
}

func equalFold(want, what string) func(string, func(string) string) (string, bool) {
	return func(v string, _ func(string) string) (string, bool) {
		return what, strings.EqualFold(v, want)
	}
}

func anyValue(what string) func(string, func(string) string) (string, bool) {
	return func(string, func(string) string) (string, bool) { return what, true }
}

// debugPerCall: NCCL_DEBUG=TRACE (per-call tracing in TRACE builds), or
// INFO with NCCL_DEBUG_SUBSYS naming COLL or ALL (enqueue.cc logs every
// collective at INFO under COLL). NCCL compares levels with strcasecmp.
func debugPerCall(v string, env func(string) string) (string, bool) {
	if strings.EqualFold(v, "TRACE") {
		return "tracing is on", true
	}
	if !strings.EqualFold(v, "INFO") {
		return "", false
	}
	sub := env("NCCL_DEBUG_SUBSYS")
	if strings.HasPrefix(sub, "^") {
		return "", false
	}
	for _, s := range strings.Split(sub, ",") {
		if strings.EqualFold(s, "COLL") || strings.EqualFold(s, "ALL") {
			return "with NCCL_DEBUG_SUBSYS=" + srunconf.Show(sub) + " every collective is logged", true
		}
	}
	return "", false
}
