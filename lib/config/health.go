package config

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"gpuprep/lib/suggest"
)

// HealthSection is [health]: the node checks the prolog runs before it
// changes anything, and the epilog after the job (lib/health). Every check
// has a severity (HealthFatal drains the node, HealthWarn records, HealthOff
// skips) and may be debounced: fatal only after that many consecutive
// failures.
type HealthSection struct {
	Prolog bool `toml:"prolog"` // run the fast checks in the prolog
	Epilog bool `toml:"epilog"` // run the post-job checks in the epilog
	// ModelFile is a TOML file of expected values per GPU model name
	// (nvlinks, pcie_width, pcie_speed, driver_min); "" for none.
	ModelFile string `toml:"model_file"`
	// GPUCount is the GPUs the node must have; 0: as many as NVIDIA
	// display controllers on the PCI bus (a GPU the driver lost fails).
	GPUCount  int    `toml:"gpu_count"`
	DriverMin string `toml:"driver_min"` // lowest driver version, "535.104"; "" any
	// NVLinks is the active NVLinks each GPU must have: -1 all it has,
	// 0 not checked (unless the model file says).
	NVLinks int `toml:"nvlinks"`
	// IBRateGbps is the rate every InfiniBand port must run at (its
	// state ACTIVE in any case); 0 any rate.
	IBRateGbps int `toml:"ib_rate_gbps"`
	// IBDevices are the HCAs checked ("mlx5_0"); [] every one whose port's
	// link layer is InfiniBand.
	IBDevices []string `toml:"ib_devices"`
	Swap      string   `toml:"swap"` // "off": no active swap; "any"
	// NCCLTopoFile must exist and parse as an NCCL topology (XML); ""
	// not checked.
	NCCLTopoFile string            `toml:"nccl_topo_file"`
	Severity     map[string]string `toml:"severity"` // check name -> fatal|warn|off
	Debounce     map[string]int    `toml:"debounce"` // check name -> consecutive failures before it counts
	// XIDFatal and XIDWarn are the XID codes that drain the node and that
	// only warn; XIDOther is the severity of any other code.
	XIDFatal []int  `toml:"xid_fatal"`
	XIDWarn  []int  `toml:"xid_warn"`
	XIDOther string `toml:"xid_other"`
	// AppXIDJobs is how many distinct jobs with application Xids (13, 31,
	// 69: the job's own faults) on one GPU in a boot make it the GPU's
	// finding (XID_APP_JOBS), at AppXIDJobsSeverity; 0 never.
	AppXIDJobs         int    `toml:"app_xid_jobs"`
	AppXIDJobsSeverity string `toml:"app_xid_jobs_severity"`
	// ExternalCommand runs after the job in the epilog (argv, no shell):
	// ["dcgmi", "diag", "-r", "1"]; [] none. Non-zero exit or a timeout is
	// the "external" check failing.
	ExternalCommand []string      `toml:"external_command"`
	ExternalTimeout time.Duration `toml:"external_timeout"`
	// BootGrace is how long after boot gpuprep-health (HealthCheckProgram)
	// only warns about the checks that wait for daemons (persistence,
	// NVLinks through the fabric manager, InfiniBand ports, the GPU count
	// and driver, the NCCL topology file) instead of draining; 0 none.
	BootGrace time.Duration `toml:"boot_grace"`
	// ProbeEvery is how old the probes' verdict (gpuprep-health --probe)
	// may grow before gpuprep-health, run by slurmd on an idle node,
	// starts a probe in the background; 0 never.
	ProbeEvery time.Duration `toml:"probe_every"`
	// ProbeMaxAge is the age past which a verdict is "unknown": reported,
	// never a pass; 0 never too old.
	ProbeMaxAge time.Duration `toml:"probe_max_age"`
	// ProbeFloor is the fraction of what the hardware is built for (PCIe
	// link rate, memory and NVLink bandwidth, FP32 peak at the highest
	// clock) a probe must reach; ProbeComputeRatio the fraction of the FP32
	// peak at the clock the compute probe ran at.
	ProbeFloor        float64 `toml:"probe_floor"`
	ProbeComputeRatio float64 `toml:"probe_compute_ratio"`
	// ProbeTools runs, with the probes, the tools that are installed:
	// DCGM's diagnostic (dcgmi diag -r 2), nccl-tests' all_reduce_perf,
	// perftest's ib_write_bw loopback per HCA.
	ProbeTools bool `toml:"probe_tools"`
}

// Health severities.
const (
	HealthFatal = "fatal"
	HealthWarn  = "warn"
	HealthOff   = "off"
)

// HealthChecks names every health check, in the order they are reported.
// lib/health's tests keep it equal to the checks it implements.
var HealthChecks = []string{
	"gpu_count", "driver_version", "persistence", "ecc_mode", "ecc_volatile", "row_remap",
	"nvlinks", "pcie_link", "throttle", "ib_ports", "swap", "nccl_topo", "cmdqv", "xid",
	"leftover_processes", "external", "probe",
}

const (
	maxDebounce        = 100
	maxExternalTimeout = 10 * time.Minute
	maxBootGrace       = time.Hour
	maxAppXIDJobs      = 32 // the jobs lib/health keeps per GPU
	maxXID             = 1000
)

var driverVersionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)

// HealthSeverity is the severity of check: its [health.severity] entry,
// else HealthWarn.
func (h HealthSection) HealthSeverity(check string) string {
	if s, ok := h.Severity[check]; ok {
		return s
	}
	return HealthWarn
}

// HealthDebounce is the consecutive failures check needs before its
// severity applies: its [health.debounce] entry, at least 1.
func (h HealthSection) HealthDebounce(check string) int {
	return max(1, h.Debounce[check])
}

func checkHealth(h *HealthSection, deadline time.Duration, ps *problems) {
	k := func(name ...string) []string { return append([]string{"health"}, name...) }
	sevs := []string{HealthFatal, HealthWarn, HealthOff}
	for _, c := range slices.Sorted(maps.Keys(h.Severity)) {
		if !slices.Contains(HealthChecks, c) {
			ps.add(k("severity", c), "%s: no such check (checks: %s)%s", formatKey(k("severity", c)), strings.Join(HealthChecks, ", "), suggest.DidYouMean(c, HealthChecks))
			continue
		}
		checkOneOf(k("severity", c), h.Severity[c], sevs, ps)
	}
	for _, c := range slices.Sorted(maps.Keys(h.Debounce)) {
		if !slices.Contains(HealthChecks, c) {
			ps.add(k("debounce", c), "%s: no such check (checks: %s)%s", formatKey(k("debounce", c)), strings.Join(HealthChecks, ", "), suggest.DidYouMean(c, HealthChecks))
			continue
		}
		if n := h.Debounce[c]; n < 1 || n > maxDebounce {
			ps.add(k("debounce", c), "%s = %d: must be 1..%d", formatKey(k("debounce", c)), n, maxDebounce)
		}
	}
	checkOneOf(k("xid_other"), h.XIDOther, sevs, ps)
	checkOneOf(k("app_xid_jobs_severity"), h.AppXIDJobsSeverity, []string{HealthFatal, HealthWarn}, ps)
	if h.AppXIDJobs < 0 || h.AppXIDJobs > maxAppXIDJobs {
		ps.add(k("app_xid_jobs"), "%s = %d: must be 0 (never) or 2..%d distinct jobs", formatKey(k("app_xid_jobs")), h.AppXIDJobs, maxAppXIDJobs)
	} else if h.AppXIDJobs == 1 {
		ps.add(k("app_xid_jobs"), "%s = 1: one job's faults are the job's; must be 0 (never) or 2..%d", formatKey(k("app_xid_jobs")), maxAppXIDJobs)
	}
	checkOneOf(k("swap"), h.Swap, []string{"off", "any"}, ps)
	checkPath(k("model_file"), h.ModelFile, true, ps)
	checkPath(k("nccl_topo_file"), h.NCCLTopoFile, true, ps)
	if h.GPUCount < 0 || h.GPUCount > 64 {
		ps.add(k("gpu_count"), "%s = %d: must be 0 (the GPUs on the PCI bus) ..64", formatKey(k("gpu_count")), h.GPUCount)
	}
	if h.NVLinks < -1 || h.NVLinks > 64 {
		ps.add(k("nvlinks"), "%s = %d: must be -1 (all the GPU has), 0 (not checked) or a count up to 64", formatKey(k("nvlinks")), h.NVLinks)
	}
	if h.IBRateGbps < 0 || h.IBRateGbps > 10000 {
		ps.add(k("ib_rate_gbps"), "%s = %d: must be 0 (any) ..10000", formatKey(k("ib_rate_gbps")), h.IBRateGbps)
	}
	if h.DriverMin != "" && !driverVersionRE.MatchString(h.DriverMin) {
		ps.add(k("driver_min"), "%s = %q: must be a version such as \"550.54.15\"", formatKey(k("driver_min")), h.DriverMin)
	}
	for _, d := range h.IBDevices {
		if !wordRE.MatchString(d) {
			ps.add(k("ib_devices"), "%s: %q is not an InfiniBand device name such as \"mlx5_0\"", formatKey(k("ib_devices")), d)
		}
	}
	for _, list := range []struct {
		name  string
		codes []int
	}{{"xid_fatal", h.XIDFatal}, {"xid_warn", h.XIDWarn}} {
		for _, c := range list.codes {
			if c < 1 || c > maxXID {
				ps.add(k(list.name), "%s: XID %d: must be 1..%d", formatKey(k(list.name)), c, maxXID)
			}
		}
	}
	for _, c := range h.XIDWarn {
		if slices.Contains(h.XIDFatal, c) {
			ps.add(k("xid_warn"), "%s: XID %d is also in health.xid_fatal", formatKey(k("xid_warn")), c)
		}
	}
	if len(h.ExternalCommand) > 0 && !strings.HasPrefix(h.ExternalCommand[0], "/") {
		ps.add(k("external_command"), "%s: the program %q must be an absolute path (the epilog runs with no PATH)", formatKey(k("external_command")), h.ExternalCommand[0])
	}
	if h.BootGrace < 0 || h.BootGrace > maxBootGrace {
		ps.add(k("boot_grace"), "%s = %q: must be 0s..%s", formatKey(k("boot_grace")), h.BootGrace, maxBootGrace)
	}
	checkProbe(h, ps)
	if h.ExternalTimeout <= 0 || h.ExternalTimeout > maxExternalTimeout {
		ps.add(k("external_timeout"), "%s = %q: must be 1s..%s (and below general.deadline)", formatKey(k("external_timeout")), h.ExternalTimeout, maxExternalTimeout)
	} else if len(h.ExternalCommand) > 0 && h.ExternalTimeout >= deadline {
		ps.add(k("external_timeout"), "%s = %q: must be below general.deadline (%s), which bounds the whole epilog", formatKey(k("external_timeout")), h.ExternalTimeout, deadline)
	}
}

// maxProbeAge bounds probe_every and probe_max_age.
const maxProbeAge = 365 * 24 * time.Hour

// checkProbe checks the probes' settings.
func checkProbe(h *HealthSection, ps *problems) {
	k := func(name string) []string { return []string{"health", name} }
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"probe_every", h.ProbeEvery}, {"probe_max_age", h.ProbeMaxAge}} {
		if d.v < 0 || d.v > maxProbeAge {
			ps.add(k(d.key), "%s = %q: must be 0s (never) ..%s", formatKey(k(d.key)), d.v, maxProbeAge)
		}
	}
	if h.ProbeMaxAge > 0 && h.ProbeEvery > h.ProbeMaxAge {
		ps.add(k("probe_every"), "%s = %q: must not exceed health.probe_max_age (%s), or every verdict ages into unknown before the next probe", formatKey(k("probe_every")), h.ProbeEvery, h.ProbeMaxAge)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"probe_floor", h.ProbeFloor}, {"probe_compute_ratio", h.ProbeComputeRatio}} {
		if f.v < 0 || f.v > 1 {
			ps.add(k(f.key), "%s = %g: must be a fraction, 0 (not judged) to 1", formatKey(k(f.key)), f.v)
		}
	}
}
