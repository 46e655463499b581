package health

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"gpuprep/lib/gpu"
	"gpuprep/lib/state"
)

// StateFile is the health state in the spool.
const StateFile = "health.json"

// maxClears bounds the clears State keeps (the log keeps them all).
const maxClears = 32

// State is what the checks remember between runs, in the spool (root-owned,
// not user-writable, read without following symlinks: lib/state).
//
// The kernel log watermark: the boot it belongs to and the sequence number
// of the next record not yet seen. kmsg sequence numbers start at 0 at each
// boot, so a state of another boot starts over from 0; a record below Next
// was seen by an earlier run and never counts again, however long the log
// keeps it.
//
// History is each GPU's Xids of this boot, by bus id: one record per code
// (history.go), so that no flood of one code can push another out, and
// every code kept, whatever [health] says is fatal today. It is emptied
// only by a reboot (a new boot id), an admin's gpuprep-health --clear, or
// the driver's recovery action back to none after a run read it as not
// none (Recovery, the last action read of each GPU): never by what a log
// line says.
//
// Streaks are the consecutive failures of each debounced check and scope.
// Clears are the last clears of a GPU's history, newest last; they and
// the streaks outlive a reboot.
type State struct {
	BootID   string                        `json:"boot_id"`
	Next     uint64                        `json:"kmsg_next_seq"`
	History  map[string]GPUHistory         `json:"xid_history,omitempty"`
	Recovery map[string]gpu.RecoveryAction `json:"recovery_action,omitempty"`
	Streaks  map[string]int                `json:"streaks,omitempty"`
	// AppJobs are, by bus id, the jobs that had application faults on
	// the GPU this boot (appxid.go), oldest first; cleared with the GPU.
	AppJobs map[string][]AppXIDJob `json:"app_xid_jobs,omitempty"`
	Clears  []Clear                `json:"clears,omitempty"`
}

// Clear is one clear of a GPU's Xid history: when, by whom ("driver" for
// its recovery action back to none, else the admin), why, and the codes it
// ended.
type Clear struct {
	Time   time.Time `json:"time"`
	BusID  string    `json:"bus_id"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Codes  []int     `json:"codes"`
}

// ByDriver is Clear.By for a clear by the driver's recovery action.
const ByDriver = "driver"

// LoadState reads the state from the spool; none (or no spool) is an empty
// state. A state of an older release (each GPU's last 32 Xids as a list)
// loads as one record per code.
func LoadState(sp *state.Spool) (*State, error) {
	st := &State{}
	if sp == nil {
		return st, nil
	}
	if _, err := sp.ReadJSON(StateFile, st); err != nil {
		return nil, fmt.Errorf("health state: %w", err)
	}
	return st, nil
}

// Save writes the state to the spool.
func (st *State) Save(sp *state.Spool) error {
	if err := sp.WriteJSON(StateFile, st); err != nil {
		return fmt.Errorf("health state: %w", err)
	}
	return nil
}

// Advance takes the kernel log of boot bootID read now and returns the
// XIDs that are new (at or above the watermark, or all of them on a new
// boot) and the records lost that this run should have seen: from the
// watermark up to the first record the log still holds (overwritten
// between runs), and the gaps of the read itself at or above the
// watermark. It moves the watermark past the last record read and adds
// the new XIDs to their GPU's history. A new boot starts a new state
// (streaks and clears kept). It does no I/O.
func (st *State) Advance(bootID string, k KernelLog) (fresh []XID, lost []Gap) {
	if st.BootID != bootID {
		*st = State{BootID: bootID, Streaks: st.Streaks, Clears: st.Clears}
	}
	if st.History == nil {
		st.History = map[string]GPUHistory{}
	}
	lost = unseen(k, st.Next)
	for _, rec := range k.Records {
		if rec.Seq < st.Next {
			continue
		}
		x, ok := ParseXID(rec)
		if !ok {
			continue
		}
		fresh = append(fresh, x)
		st.History[x.BusID] = st.History[x.BusID].add(x)
	}
	if k.N > 0 && k.Last+1 > st.Next {
		st.Next = k.Last + 1
	}
	return fresh, lost
}

// unseen is what of the records at or above next the read k lost: those
// below the first record it read (the ring buffer dropped them before this
// run opened it), and its own gaps, cut at next (records below it were
// seen by an earlier run).
func unseen(k KernelLog, next uint64) []Gap {
	var out []Gap
	if k.N > 0 && k.First > next {
		out = append(out, Gap{From: next, To: k.First})
	}
	for _, g := range k.Lost {
		if g.To != 0 && g.To <= next {
			continue
		}
		g.From = max(g.From, next)
		out = append(out, g)
	}
	return out
}

// Observe records the recovery action read now of each GPU in read (by
// bus id) and clears the Xid history of a GPU whose action is back to
// none after the last one read was not: the driver says its recovery is
// done. Only the records earlier runs read are cleared (those whose last
// occurrence is below seen, the watermark this run started from): an Xid
// this run read may have come after the recovery. certain is false when
// this run could not read the whole kernel log since the last run (records
// lost, or the log unreadable): then nothing is cleared and a not-none
// action stays recorded, so the first run that reads everything clears
// it. It returns the clears, stamped now; it does no I/O.
func (st *State) Observe(read map[string]gpu.RecoveryAction, seen uint64, certain bool, now time.Time) []Clear {
	if st.Recovery == nil {
		st.Recovery = map[string]gpu.RecoveryAction{}
	}
	var out []Clear
	for _, bus := range slices.Sorted(maps.Keys(read)) {
		action := read[bus]
		prev, known := st.Recovery[bus]
		if known && prev != gpu.RecoveryNone && action == gpu.RecoveryNone {
			if !certain {
				continue // keep prev: decided by a run that reads everything
			}
			if c, ok := st.clearBus(bus, seen, ByDriver, fmt.Sprintf("the driver's recovery action is back to none (was %s)", prev), now); ok {
				out = append(out, c)
			}
		}
		st.Recovery[bus] = action
	}
	return out
}

// ClearAdmin ends the Xid history of the GPUs buses (nil: every GPU's),
// recording by whom and why; it returns one Clear per GPU that had any.
// It does no I/O.
func (st *State) ClearAdmin(buses []string, by, reason string, now time.Time) []Clear {
	if buses == nil {
		buses = slices.Sorted(maps.Keys(st.History))
	}
	var out []Clear
	for _, bus := range buses {
		if c, ok := st.clearBus(bus, ^uint64(0), by, reason, now); ok {
			out = append(out, c)
		}
	}
	return out
}

// clearBus removes the records of bus last seen below seq, and records
// the clear; ok false when there were none.
func (st *State) clearBus(bus string, seq uint64, by, reason string, now time.Time) (Clear, bool) {
	st.clearAppJobs(bus, seq)
	kept, gone := st.History[bus].split(seq)
	if len(gone) == 0 {
		return Clear{}, false
	}
	if len(kept) == 0 {
		delete(st.History, bus)
	} else {
		st.History[bus] = kept
	}
	c := Clear{Time: now.UTC(), BusID: bus, By: by, Reason: reason}
	for _, r := range gone {
		c.Codes = append(c.Codes, r.Code)
	}
	st.Clears = append(st.Clears, c)
	if len(st.Clears) > maxClears {
		st.Clears = slices.Clone(st.Clears[len(st.Clears)-maxClears:])
	}
	return c, true
}

// streak records a debounced check's outcome: the consecutive failures so
// far, counting this one (0 after a pass).
func (st *State) streak(key string, failed bool) int {
	if !failed {
		delete(st.Streaks, key)
		return 0
	}
	if st.Streaks == nil {
		st.Streaks = map[string]int{}
	}
	st.Streaks[key]++
	return st.Streaks[key]
}
