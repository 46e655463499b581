package health

import (
	"fmt"

	"gpuprep/lib/state"
)

// StateFile is the health state in the spool.
const StateFile = "health.json"

// maxHistory bounds each GPU's XID history.
const maxHistory = 32

// State is what the checks remember between runs, in the spool (root-owned,
// not user-writable, read without following symlinks: lib/state).
//
// The kernel log watermark: the boot it belongs to and the sequence number
// of the next record not yet seen. kmsg sequence numbers start at 0 at each
// boot, so a state of another boot starts over from 0; a record below Next
// was seen by an earlier run and never counts again, however long the log
// keeps it.
//
// History is each GPU's XIDs of this boot since its last reset, by bus id,
// for the report; a driver line saying the GPU was reset clears it (a
// reboot too). Streaks are the consecutive failures of each debounced
// check and scope.
type State struct {
	BootID  string           `json:"boot_id"`
	Next    uint64           `json:"kmsg_next_seq"`
	History map[string][]XID `json:"xid_history,omitempty"`
	Streaks map[string]int   `json:"streaks,omitempty"`
}

// LoadState reads the state from the spool; none (or no spool) is an empty
// state.
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

// Advance takes the kernel log records of boot bootID read now (recs, the
// NVRM ones; last, the highest sequence number read) and returns the XIDs
// that are new: at or above the watermark, or all of them on a new boot. It
// moves the watermark past last, adds the new XIDs to their GPU's history
// and clears the history of a GPU the driver says was reset. It does no
// I/O.
func (st *State) Advance(bootID string, recs []Record, last uint64, anyRead bool) []XID {
	if st.BootID != bootID {
		*st = State{BootID: bootID, Streaks: st.Streaks}
	}
	if st.History == nil {
		st.History = map[string][]XID{}
	}
	var fresh []XID
	for _, rec := range recs {
		if rec.Seq < st.Next {
			continue
		}
		if bus, ok := ParseReset(rec); ok {
			delete(st.History, bus)
			continue
		}
		x, ok := ParseXID(rec)
		if !ok {
			continue
		}
		fresh = append(fresh, x)
		h := append(st.History[x.BusID], x)
		if len(h) > maxHistory {
			h = h[len(h)-maxHistory:]
		}
		st.History[x.BusID] = h
	}
	if anyRead && last+1 > st.Next {
		st.Next = last + 1
	}
	return fresh
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
