package health

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/textfmt"
)

// XID is one Xid event from the kernel log.
type XID struct {
	Code  int    `json:"code"`
	BusID string `json:"bus_id"` // canonical, "0000:18:00.0"
	// MIG is the driver's MIG attribution, "GPU-I:05 GPU-CI:01", if any.
	MIG  string `json:"mig,omitempty"`
	Seq  uint64 `json:"seq"`
	USec uint64 `json:"usec"`
	Text string `json:"text"` // the rest of the line, clipped
	// To is the action an Xid 154 changed to, when its line says.
	To *gpu.RecoveryAction `json:"to_action,omitempty"`
	// Severity is the code's, from [health] xid_fatal, xid_warn, xid_other.
	Severity string `json:"severity"`
	// Jobs are the jobs that held the GPU when the run read the Xid
	// (Options.Holders; appxid.go): none when no job did.
	Jobs []string `json:"jobs,omitempty"`
}

// Only the driver's own lines count: a record of the kernel facility (no
// user-space write to /dev/kmsg gets it) whose message starts with the
// driver's prefix. Anyone can get "NVRM: Xid ..." into a kernel record's
// middle (a mount option the kernel echoes: "tmpfs: Unknown parameter
// 'NVRM: Xid (...)'") or into a user-facility one, and genuine lines carry
// a name the user chose (name=<comm>), so the patterns are anchored at the
// start and read nothing after the prefix but its code and free text.

// xidRE matches the driver's Xid lines, as the open kernel modules' RC
// code prints them (kernel_rc.c, krcReportXid: "NVRM: Xid (PCI:%04x:%02x:%02x"
// with " GPU-I:%02u" and " GPU-CI:%02u" on MIG, then "): %d, pid=%s,
// name=%s, %s" or, with no process, "): %d, %s"):
//
//	NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//	NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No
//
// and older drivers' lines without "PCI:" ("NVRM: Xid (0000:01:00): 3, ...").
var xidRE = regexp.MustCompile(`^NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?((?: GPU-C?I:\d+)*)\): (\d+)(?:,\s*(.*))?$`)

// XIDRecoveryChanged is Xid 154, GPU_RECOVERY_ACTION_CHANGED: "GPU
// recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)". It
// is judged by the action it changed to, not by its code.
const XIDRecoveryChanged = 154

// recoveryChangeRE reads the action an Xid 154 line changed to: the
// number after "to 0x" (the names vary between drivers: "GPU Reset
// Required", "PF FLR", "Node Reboot Required", "OS Reboot").
var recoveryChangeRE = regexp.MustCompile(`\bfrom 0x[0-9A-Fa-f]+ \([^)]*\) to 0x([0-9A-Fa-f]{1,8})\b`)

// ParseXID reads a driver Xid line; ok is false for any other record,
// however much of an Xid line its message holds.
func ParseXID(rec Record) (x XID, ok bool) {
	if !rec.FromKernel() {
		return x, false
	}
	m := xidRE.FindStringSubmatch(rec.Msg)
	if m == nil {
		return x, false
	}
	code, err := strconv.Atoi(m[3])
	if err != nil {
		return x, false
	}
	x = XID{Code: code, BusID: canonicalBus(m[1]), MIG: strings.TrimSpace(m[2]), Seq: rec.Seq, USec: rec.USec,
		Text: textfmt.Fit(strings.TrimSpace(m[4]), 60)}
	if code == XIDRecoveryChanged {
		// The driver's text is the line's end: its last match.
		if all := recoveryChangeRE.FindAllStringSubmatch(m[4], -1); all != nil {
			v, _ := strconv.ParseUint(all[len(all)-1][1], 16, 32)
			to := gpu.RecoveryAction(v)
			x.To = &to
		}
	}
	return x, true
}

// canonicalBus turns "0000:18:00" into "0000:18:00.0" (the driver names
// function 0), lower case, a 4-digit domain.
func canonicalBus(b string) string {
	b = strings.ToLower(b)
	if i := strings.IndexByte(b, ':'); i > 4 {
		b = b[i-4:]
	}
	return b + ".0"
}

// XIDSeverity is the severity of an XID code: fatal if xid_fatal lists it,
// warn if xid_warn does, else xid_other; capped by the xid check's own
// severity (xid = "warn" makes every XID a warning). An Xid 154 whose line
// names the action it changed to (to non-nil) is fatal for any action but
// none, and a warning for none, whatever the lists say.
func XIDSeverity(h config.HealthSection, code int, to *gpu.RecoveryAction) string {
	sev := h.XIDOther
	switch {
	case code == XIDRecoveryChanged && to != nil && *to == gpu.RecoveryNone:
		sev = config.HealthWarn
	case code == XIDRecoveryChanged && to != nil:
		sev = config.HealthFatal
	case slices.Contains(h.XIDFatal, code):
		sev = config.HealthFatal
	case slices.Contains(h.XIDWarn, code):
		sev = config.HealthWarn
	}
	return lower(sev, h.HealthSeverity("xid"))
}

// lower is the milder of two severities (off < warn < fatal).
func lower(a, b string) string {
	rank := map[string]int{config.HealthOff: 0, config.HealthWarn: 1, config.HealthFatal: 2}
	if rank[a] <= rank[b] {
		return a
	}
	return b
}
