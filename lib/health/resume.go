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
	XID
	Why string // what would clear it
}

// StandingXIDs lists the fatal Xids (by [health] xid_fatal, xid_other) in
// each GPU's history of this boot that no evidence has cleared. A GPU's
// history is emptied by the driver's reset line and by a reboot
// (State.Advance), so an Xid in it means the GPU has not been reset since;
// a memory-error Xid (RemapXIDs) is also cleared when this run's row_remap
// check passed on that GPU (nothing pending, nothing failed). That no new
// Xid came is never evidence. gpuprep-health resumes a node it drained only
// when this is empty. It does no I/O.
func StandingXIDs(rep *Report, h config.HealthSection) []Standing {
	remapOK := map[string]bool{}
	for _, r := range rep.Results {
		if r.Check == "row_remap" && r.Status == OK && r.BusID != "" {
			remapOK[r.BusID] = true
		}
	}
	var out []Standing
	for _, bus := range slices.Sorted(maps.Keys(rep.History)) {
		for _, x := range rep.History[bus] {
			if XIDSeverity(h, x.Code) != config.HealthFatal {
				continue
			}
			if slices.Contains(RemapXIDs, x.Code) && remapOK[bus] {
				continue
			}
			why := "a reset of the GPU (nvidia-smi -r) or a reboot"
			if slices.Contains(RemapXIDs, x.Code) {
				why += ", or its row remapping reading clear"
			}
			out = append(out, Standing{XID: x, Why: why})
		}
	}
	return out
}

// StandingLine is standing as one line for the log and the node's drain
// reason: "Xid 79 on 0000:18:00.0 not cleared (needs ...)".
func StandingLine(standing []Standing) string {
	var parts []string
	for _, s := range standing {
		parts = append(parts, fmt.Sprintf("Xid %d on %s not cleared (needs %s)", s.Code, s.BusID, s.Why))
	}
	return strings.Join(parts, "; ")
}
