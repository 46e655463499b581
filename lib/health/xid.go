package health

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/config"
)

// XID is one Xid event from the kernel log.
type XID struct {
	Code  int    `json:"code"`
	BusID string `json:"bus_id"` // canonical, "0000:18:00.0"
	Seq   uint64 `json:"seq"`
	USec  uint64 `json:"usec"`
	Text  string `json:"text"` // the rest of the line, clipped
	// Severity is the code's, from [health] xid_fatal, xid_warn, xid_other.
	Severity string `json:"severity"`
}

// xidRE matches the driver's Xid lines: "NVRM: Xid (PCI:0000:18:00): 79,
// pid=..., name=..., GPU has fallen off the bus." (older drivers omit
// "PCI:").
var xidRE = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?\): (\d+),?\s*(.*)`)

// resetRE matches driver lines that say a GPU was reset or recovered
// ("NVRM: GPU 0000:18:00.0: GPU reset ...", "NVRM: GPU at PCI:0000:18:00:
// ... recovery ... complete"): a line of NVRM naming a GPU by bus and
// "reset" or "recovered", other than an Xid line (Xid 63's text says
// "reset gpu to activate", which is advice, not a reset).
var resetRE = regexp.MustCompile(`NVRM: GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?\b.*\b(?i:reset|recovered)\b`)

// ParseXID reads an Xid line; ok is false for any other message.
func ParseXID(rec Record) (x XID, ok bool) {
	m := xidRE.FindStringSubmatch(rec.Msg)
	if m == nil {
		return x, false
	}
	code, err := strconv.Atoi(m[2])
	if err != nil {
		return x, false
	}
	return XID{Code: code, BusID: canonicalBus(m[1]), Seq: rec.Seq, USec: rec.USec, Text: clip(strings.TrimSpace(m[3]))}, true
}

// ParseReset reads a GPU reset line: the GPU's bus id.
func ParseReset(rec Record) (bus string, ok bool) {
	if xidRE.MatchString(rec.Msg) {
		return "", false
	}
	m := resetRE.FindStringSubmatch(rec.Msg)
	if m == nil {
		return "", false
	}
	return canonicalBus(m[1]), true
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
// severity (xid = "warn" makes every XID a warning).
func XIDSeverity(h config.HealthSection, code int) string {
	sev := h.XIDOther
	switch {
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
