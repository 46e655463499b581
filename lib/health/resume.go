package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gpuprep/lib/config"
)

// RemapXIDs are the Xid codes of GPU memory errors (48 double-bit ECC, 63
// and 64 row remapping or page retirement, 94 and 95 contained and
// uncontained ECC errors), after which the GPU's row-remapping state is
// evidence that it recovered: once a reset has applied the pending remaps,
// NVML reads neither a pending remap nor a failed one.
var RemapXIDs = []int{48, 63, 64, 94, 95}

// Standing is a fatal Xid that still stands against its GPU.
type Standing struct {
	BusID string
	XIDRecord
}

// StandingXIDs lists the fatal records (by [health] xid_fatal, xid_other;
// Xid 154 by the action it changed to) in the GPUs' histories, by bus id,
// that no evidence has cleared. A history is emptied only by a reboot, an
// admin's --clear, or the driver's recovery action back to none
// (State.Observe), so a record in it means none of those came since; a
// memory-error Xid (RemapXIDs) also stops standing while this run's
// row_remap check passes on that GPU (remapOK: nothing pending, nothing
// failed). That no new Xid came is never evidence. It does no I/O.
func StandingXIDs(hist map[string]GPUHistory, h config.HealthSection, remapOK map[string]bool) []Standing {
	var out []Standing
	for _, bus := range slices.Sorted(maps.Keys(hist)) {
		for _, r := range hist[bus] {
			if XIDSeverity(h, r.Code, r.To) != config.HealthFatal {
				continue
			}
			if slices.Contains(RemapXIDs, r.Code) && remapOK[bus] {
				continue
			}
			out = append(out, Standing{BusID: bus, XIDRecord: r})
		}
	}
	return out
}

// clearedBy says what ends a standing Xid, for the log and docs/oncall.md:
// "a reboot, the driver's recovery action back to none, or gpuprep-health
// --clear" (and, for a memory error, its row remapping reading clear).
func (s Standing) clearedBy() string {
	why := "a reboot, the driver's recovery action back to none after a reset, or gpuprep-health --clear"
	if slices.Contains(RemapXIDs, s.Code) {
		why += ", or its row remapping reading clear"
	}
	return why
}

// describe is the record in a reason: "Xid 79 not cleared (2 times; GPU
// has fallen off the bus.)".
func (s Standing) describe() string {
	return fmt.Sprintf("Xid %d not cleared (%s; %s)", s.Code, times(s.Count), xidText(s.Code, s.Text, s.To))
}

func times(n uint64) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// StandingLine is standing as one line for the log: "Xid 79 on
// 0000:18:00.0 not cleared (needs ...)".
func StandingLine(standing []Standing) string {
	var parts []string
	for _, s := range standing {
		parts = append(parts, fmt.Sprintf("Xid %d on %s not cleared (needs %s)", s.Code, s.BusID, s.clearedBy()))
	}
	return strings.Join(parts, "; ")
}
