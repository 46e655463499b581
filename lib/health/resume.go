package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
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

// remapOKOf lists the GPUs (by bus id) whose row_remap check passed in
// results: nothing pending, nothing failed (StandingXIDs).
func remapOKOf(results []Result) map[string]bool {
	ok := map[string]bool{}
	for _, r := range results {
		if r.Check == "row_remap" && r.Status == OK && r.BusID != "" {
			ok[r.BusID] = true
		}
	}
	return ok
}

// standingResults are the fatal Xids that stand against every GPU the
// history names after a run (StandingXIDs: whatever the run's scope, and
// also after an epilog, which does not fail for them), one xid result per
// GPU as gpuprep-health would give it: the xid check's severity (fatal,
// lowered by [health.severity] xid; none when off), the reason and the
// code of the Xid whose action does the most. devs name the GPUs.
func standingResults(hist map[string]GPUHistory, h config.HealthSection, remapOK map[string]bool, devs []gpu.Device) []Result {
	sev := lower(config.HealthFatal, h.HealthSeverity("xid"))
	if sev == config.HealthOff {
		return nil
	}
	var out []Result
	byBus := map[string]int{}
	var picks []codePick
	for _, s := range StandingXIDs(hist, h, remapOK) {
		i, seen := byBus[s.BusID]
		if !seen {
			i = len(out)
			byBus[s.BusID] = i
			out = append(out, fail("xid", busScope(s.BusID, devs), s.describe()))
			out[i].BusID, out[i].Severity = s.BusID, sev
			picks = append(picks, codePick{})
		} else {
			out[i].Reason += "; " + s.describe()
		}
		picks[i].add(xidCode(s.Code), config.HealthFatal)
	}
	for i := range out {
		out[i] = out[i].withCode(picks[i].best)
	}
	return out
}

// busScope names the GPU at bus among devs, as a result's scope.
func busScope(bus string, devs []gpu.Device) string {
	for _, d := range devs {
		if d.BusID == bus {
			return gpuScope(d)
		}
	}
	return "GPU ? (" + bus + ")"
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
