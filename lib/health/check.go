// Package health checks a GPU node before a job and after it: GPUs present,
// driver, persistence, ECC and its counters, NVLinks, PCIe links,
// throttling, InfiniBand ports, swap, the NCCL topology file, the SMMU
// CMDQV driver of arm64 VMs, XIDs from the kernel log (with a per-boot
// watermark, so an XID is acted on once), and, after the job, processes
// left on its GPUs and an optional external diagnostic.
//
// It is cut in three: readers (one per kernel file or backend call, in
// facts*.go and the files they name), a pure evaluation (Evaluate: facts and
// expectations in, one Result per check and scope out), and the spool state
// that makes XIDs and debouncing span runs (state.go). Run puts them
// together for the prolog, the epilog, `gpuprep-prolog --health` and
// gpuprep-health; WriteTable prints a report for a person (table.go).
package health

import (
	"fmt"
	"strings"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/probe"
)

// Status is a check's outcome on one scope.
type Status string

// Statuses.
const (
	OK   Status = "ok"
	Fail Status = "fail"
	Skip Status = "skip" // not applicable here, not configured, or not readable with this backend
)

// Result is one check on one scope: the node, or one GPU.
type Result struct {
	Check string `json:"check"`
	// Scope is "node" or the GPU: "GPU 3 (0000:9a:00.0)".
	Scope  string `json:"scope"`
	BusID  string `json:"bus_id,omitempty"`
	Status Status `json:"status"`
	// Severity is what a failure means after debouncing: fatal (the node
	// drains), warn, or off; "" when the check passed or was skipped.
	Severity string `json:"severity,omitempty"`
	// Reason is one line: what failed, or why the check was skipped.
	Reason string `json:"reason,omitempty"`
	// Value is what was read, when it passed ("8 GPUs", "550.54.15").
	Value string `json:"value,omitempty"`
	// Streak is the consecutive failures of a debounced check, Debounce the
	// count at which its severity applies.
	Streak   int `json:"streak,omitempty"`
	Debounce int `json:"debounce,omitempty"`
	// Code names a failure for good ("XID79", "PCIE_DEGRADED": codes.go,
	// gpuprep-health --explain), Action says what to do about it; both
	// "" unless the check failed.
	Code   string      `json:"code,omitempty"`
	Action ActionClass `json:"action,omitempty"`
}

// withCode is r carrying code c.
func (r Result) withCode(c Code) Result {
	r.Code, r.Action = c.Name, c.Action
	return r
}

// key identifies a check on a scope across runs (debounce streaks).
func (r Result) key() string { return r.Check + "@" + r.Scope }

// Line is the result as one line: "ecc_volatile GPU 3 (0000:9a:00.0): fail
// (fatal) ECC_UNCORRECTABLE reset_gpu: 2 ...".
func (r Result) Line() string {
	s := fmt.Sprintf("%s %s: %s", r.Check, r.Scope, r.Status)
	if r.Severity != "" {
		s += " (" + r.Severity + ")"
	}
	if r.Code != "" {
		s += " " + r.Code + " " + string(r.Action)
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	} else if r.Value != "" {
		s += ": " + r.Value
	}
	return s
}

// Report is a run's results, in config.HealthChecks order.
type Report struct {
	Op      string   `json:"op"` // "prolog", "epilog", "health"
	Backend string   `json:"gpu_backend"`
	GPUs    int      `json:"gpus"` // GPUs the backend lists
	Results []Result `json:"results"`
	// XIDs are the new XIDs this run read from the kernel log.
	XIDs []XID `json:"xids,omitempty"`
	// History is each GPU's Xids this boot since it was last cleared,
	// one record per code, each with what it means now (its severity).
	History map[string]GPUHistory `json:"xid_history,omitempty"`
	// Standing are the fatal Xids that stand against the node's GPUs after
	// this run, one xid result per GPU, whatever the run's scope or op
	// (an epilog's too, which does not fail for them; gpuprep-health's
	// and a prolog's Results hold those in their scope as well): what
	// the metrics' xid status says until they are cleared.
	Standing []Result `json:"standing_xids,omitempty"`
	// Recovery is the driver's recovery action of each GPU in scope that
	// could be read (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION).
	Recovery map[string]gpu.RecoveryAction `json:"recovery_action,omitempty"`
	// Cleared are the GPUs whose Xid history this run cleared (their
	// recovery action back to none).
	Cleared []Clear `json:"cleared,omitempty"`
	// KmsgLost is how many kernel log records this run should have read
	// but the log had lost (an overflow): Xids in them are unknown.
	KmsgLost uint64 `json:"kmsg_lost_records,omitempty"`
	// Millis is how long the checks took.
	Millis float64 `json:"ms"`
	// Inventory is every GPU the backend lists: what the metrics label a
	// GPU's results and Xids with.
	Inventory []GPURef `json:"inventory,omitempty"`
	// Probe is what the probes' saved verdict says now ("" when the probe
	// check did not run), and ProbeTime when it was taken.
	Probe     probe.Status `json:"probe,omitempty"`
	ProbeTime *time.Time   `json:"probe_time,omitempty"`
}

// GPURef names one GPU: its NVML index, UUID and canonical PCI bus id.
type GPURef struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	BusID string `json:"bus_id"`
}

// Fatal lists the failures whose severity is fatal.
func (r *Report) Fatal() []Result { return r.with(config.HealthFatal) }

// Warnings lists the failures whose severity is warn.
func (r *Report) Warnings() []Result { return r.with(config.HealthWarn) }

func (r *Report) with(sev string) []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Status == Fail && x.Severity == sev {
			out = append(out, x)
		}
	}
	return out
}

// ReasonPrefix starts Reason: a hook's drain reason is then
// "gpuprep-prolog: health: ..." (OwnsDrain).
const ReasonPrefix = "health: "

// Reason is the fatal failures' reasons, each after its code and action,
// joined with "; ", "" when none: the first line of the prolog's stderr
// ("health: ECC_UNCORRECTABLE reset_gpu: GPU 3 (...): ...").
func (r *Report) Reason() string {
	var parts []string
	for _, x := range r.Fatal() {
		parts = append(parts, x.CodedReason())
	}
	if len(parts) == 0 {
		return ""
	}
	return ReasonPrefix + strings.Join(parts, "; ")
}

// CodedReason is the failure's reason after its code and action:
// "XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 (...)"; the reason alone
// where it has no code.
func (r Result) CodedReason() string {
	if r.Code == "" {
		return r.Reason
	}
	return r.Code + " " + string(r.Action) + ": " + r.Reason
}

// gpuScope names a GPU in scopes and reasons: "GPU 3 (0000:9a:00.0)".
func gpuScope(d gpu.Device) string { return fmt.Sprintf("GPU %d (%s)", d.Index, d.BusID) }

const nodeScope = "node"

func ok(check, scope, value string) Result {
	return Result{Check: check, Scope: scope, Status: OK, Value: value}
}

func skip(check, scope, why string) Result {
	return Result{Check: check, Scope: scope, Status: Skip, Reason: why}
}

// fail is a failure whose reason names its scope ("GPU 3 (...): why";
// node failures carry their own subject).
func fail(check, scope, why string) Result {
	reason := why
	if scope != nodeScope {
		reason = scope + ": " + why
	}
	return failWhole(check, scope, reason)
}

// failWhole is a failure whose reason names its subject already, with its
// check's first code (codes.go); the caller sets another where the
// check's failures differ.
func failWhole(check, scope, reason string) Result {
	return Result{Check: check, Scope: scope, Status: Fail, Reason: reason}.withCode(defaultCode(check))
}

// Summary is one line for the log: "60 ok, 0 fatal, 1 warn, 12 skipped, 14.2 ms".
func (r *Report) Summary() string {
	var okN, skipN int
	for _, x := range r.Results {
		switch x.Status {
		case OK:
			okN++
		case Skip:
			skipN++
		}
	}
	return fmt.Sprintf("%d ok, %d fatal, %d warn, %d skipped, %.1f ms", okN, len(r.Fatal()), len(r.Warnings()), skipN, r.Millis)
}
