package metrics

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Health metric names.
const (
	MetricCheckStatus   = "gpuprep_health_check_status"
	MetricCheckLastFail = "gpuprep_health_check_last_failure_timestamp_seconds"
	MetricXIDEvents     = "gpuprep_xid_events_total"
	MetricNodeDrained   = "gpuprep_node_drained"
	MetricKmsgLost      = "gpuprep_kmsg_lost_records_total"
	MetricXIDClears     = "gpuprep_xid_clears_total"
	MetricStateSaved    = "gpuprep_health_state_saved"
	MetricFailureInfo   = "gpuprep_health_failure_info"
)

// Who clears a GPU's Xid history: XIDClearCount.Source.
const (
	ClearByAdmin  = "admin"  // gpuprep-health --clear
	ClearByDriver = "driver" // its recovery action back to none
)

// XIDClearCount is how many times this writer cleared one GPU's Xid
// history, by source.
type XIDClearCount struct {
	Source string `json:"source"`
	GPULabels
	Count uint64 `json:"count"`
}

// AddXIDClear counts one clear of GPU g's Xid history by source.
func (m *Metrics) AddXIDClear(source string, g GPULabels) {
	if m.XIDClears == nil {
		m.XIDClears = map[string]XIDClearCount{}
	}
	k := source + "@" + g.BusID
	c := m.XIDClears[k]
	c.Source, c.GPULabels = source, g
	c.Count++
	m.XIDClears[k] = c
}

// Check statuses, gpuprep_health_check_status's values.
const (
	StatusOK    = 0
	StatusWarn  = 1
	StatusFatal = 2
)

// GPULabels name a GPU as dcgm-exporter does, so the two join: gpu (the
// NVML index), UUID, pci_bus_id (NVML's form, "00000000:1B:00.0"). All ""
// for a node-wide check.
type GPULabels struct {
	GPU   string `json:"gpu,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	BusID string `json:"pci_bus_id,omitempty"`
}

// CheckState is one health check on one GPU (or the node): its status in
// the writer's last run that checked it, and when it last failed.
type CheckState struct {
	Check string `json:"check"`
	GPULabels
	// Status is StatusOK, StatusWarn or StatusFatal; Current false when
	// the last run skipped the check here (no status series then).
	Status      int       `json:"status"`
	Current     bool      `json:"current"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	// Code and Action are the failure's (lib/health's codes: "XID79",
	// "reboot") while Status is not StatusOK.
	Code   string `json:"code,omitempty"`
	Action string `json:"action,omitempty"`
}

// Failure is a check's code and action class where it failed.
type Failure struct{ Code, Action string }

// XIDCount is how many Xids of one code this writer read for one GPU.
type XIDCount struct {
	Code     int    `json:"code"`
	Severity string `json:"severity"`
	GPULabels
	Count uint64 `json:"count"`
}

// CheckKey is a CheckState's key in Metrics.Checks.
func CheckKey(check string, g GPULabels) string { return check + "@" + g.BusID }

// XIDKey is an XIDCount's key in Metrics.XIDs.
func XIDKey(code int, g GPULabels) string { return strconv.Itoa(code) + "@" + g.BusID }

// SetCheck records a check's outcome on a scope at now: a status (several
// results of one check and GPU, such as InfiniBand ports, keep the worst),
// or skipped (the status series goes; the last failure stays).
func (m *Metrics) SetCheck(check string, g GPULabels, status int, f Failure, skipped bool, now time.Time, seen map[string]bool) {
	if m.Checks == nil {
		m.Checks = map[string]CheckState{}
	}
	k := CheckKey(check, g)
	c, known := m.Checks[k]
	if skipped && !known {
		return
	}
	c.Check, c.GPULabels = check, g
	switch {
	case skipped && !seen[k]:
		c.Current = false
	case !skipped:
		if !seen[k] || status > c.Status {
			c.Status = status
			c.Code, c.Action = f.Code, f.Action
			if status == StatusOK {
				c.Code, c.Action = "", ""
			}
		}
		c.Current = true
		seen[k] = true
		if status != StatusOK {
			c.LastFailure = now.UTC()
		}
	}
	m.Checks[k] = c
}

// ResetCheck drops the status series of every scope of check (their last
// failures stay): for a check whose every run speaks for all scopes, such
// as xid (no new Xid on any GPU), before its new results are set.
func (m *Metrics) ResetCheck(check string) {
	for k, c := range m.Checks {
		if c.Check == check {
			c.Current = false
			m.Checks[k] = c
		}
	}
}

// AddXID counts one Xid.
func (m *Metrics) AddXID(code int, severity string, g GPULabels) {
	if m.XIDs == nil {
		m.XIDs = map[string]XIDCount{}
	}
	k := XIDKey(code, g)
	x := m.XIDs[k]
	x.Code, x.Severity, x.GPULabels = code, severity, g
	x.Count++
	m.XIDs[k] = x
}

func gpuLabels(b *promBuf, g GPULabels, more ...string) []string {
	l := append([]string{}, more...)
	l = append(l, b.nodeLabels()...)
	if g.GPU != "" {
		l = append(l, "gpu", g.GPU)
	}
	if g.UUID != "" {
		l = append(l, "UUID", g.UUID)
	}
	if g.BusID != "" {
		l = append(l, "pci_bus_id", g.BusID)
	}
	return l
}

// formatHealth writes the health families.
func formatHealth(b *promBuf, hook string, m Metrics) {
	keys := slices.Sorted(maps.Keys(m.Checks))
	family(b, MetricCheckStatus, "gauge",
		"Outcome of a gpuprep health check in the writer's last run that checked it: 0 passed, 1 failed with severity warn, 2 failed fatal (the node drains). GPU labels as dcgm-exporter's; none for a node-wide check. check=\"xid\" is 2 on a GPU while a fatal Xid stands against it, in every writer's file, until it is cleared (a reboot, the driver's recovery action back to none, gpuprep-health --clear).")
	for _, k := range keys {
		if c := m.Checks[k]; c.Current {
			sample(b, MetricCheckStatus, float64(c.Status), gpuLabels(b, c.GPULabels, "hook", hook, "check", c.Check)...)
		}
	}
	family(b, MetricFailureInfo, "gauge",
		"1 for each check failing now (warn or fatal) in the writer's last run, with the failure's code and action class (gpuprep-health --explain CODE says what to do).")
	for _, k := range keys {
		if c := m.Checks[k]; c.Current && c.Status != StatusOK && c.Code != "" {
			sample(b, MetricFailureInfo, 1, gpuLabels(b, c.GPULabels, "hook", hook, "check", c.Check, "code", c.Code, "action", c.Action)...)
		}
	}
	family(b, MetricCheckLastFail, "gauge", "When the check last failed (warn or fatal) in this writer's runs, in seconds since the Unix epoch.")
	for _, k := range keys {
		if c := m.Checks[k]; !c.LastFailure.IsZero() {
			sample(b, MetricCheckLastFail, float64(c.LastFailure.UnixMilli())/1000, gpuLabels(b, c.GPULabels, "hook", hook, "check", c.Check)...)
		}
	}
	family(b, MetricXIDEvents, "counter",
		"Xid events of the NVIDIA driver read from the kernel log by this writer, by code and severity ([health] xid_fatal, xid_warn, xid_other); each Xid is counted by exactly one run, so sum over hook.")
	for _, k := range slices.SortedFunc(maps.Keys(m.XIDs), func(a, b string) int {
		x, y := m.XIDs[a], m.XIDs[b]
		if x.BusID != y.BusID {
			if x.BusID < y.BusID {
				return -1
			}
			return 1
		}
		return x.Code - y.Code
	}) {
		x := m.XIDs[k]
		sample(b, MetricXIDEvents, float64(x.Count), gpuLabels(b, x.GPULabels, "hook", hook, "code", strconv.Itoa(x.Code), "severity", x.Severity)...)
	}
	family(b, MetricKmsgLost, "counter",
		"Kernel log records this writer should have read but the kernel had overwritten first (the log overflowed): an Xid in them is unknown. A gap of unknown length counts 1.")
	sample(b, MetricKmsgLost, float64(m.KmsgLost), "hook", hook)
	family(b, MetricXIDClears, "counter",
		"Clears of a GPU's Xid history, which end its standing fatal Xids: source admin (gpuprep-health --clear, logged with who and why) or driver (its recovery action back to none).")
	for _, k := range slices.Sorted(maps.Keys(m.XIDClears)) {
		c := m.XIDClears[k]
		sample(b, MetricXIDClears, float64(c.Count), gpuLabels(b, c.GPULabels, "hook", hook, "source", c.Source)...)
	}
	if hook == HookHealth {
		family(b, MetricStateSaved, "gauge", "1 when gpuprep-health's last run saved its state (the Xid watermark and history) in the spool, 0 when it could not (a full file system): it acted all the same.")
		if m.StateSaved != nil {
			sample(b, MetricStateSaved, float64(*m.StateSaved), "hook", hook)
		}
		family(b, MetricNodeDrained, "gauge", "1 when the node is drained with a reason gpuprep set (its health checks failed), 0 when it is not; absent when slurmctld could not be asked.")
		if m.Drained != nil && *m.Drained >= 0 {
			sample(b, MetricNodeDrained, float64(*m.Drained), "hook", hook)
		}
	}
}
