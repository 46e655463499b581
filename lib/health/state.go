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
// reboot too), never in a run that found kernel log records lost.
// Streaks are the consecutive failures of each debounced check and scope.
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

// Advance takes the kernel log of boot bootID read now and returns the
// XIDs that are new (at or above the watermark, or all of them on a new
// boot) and the records lost that this run should have seen: from the
// watermark up to the first record the log still holds (overwritten
// between runs), and the gaps of the read itself at or above the
// watermark. It moves the watermark past the last record read, adds the
// new XIDs to their GPU's history and clears the history of a GPU the
// driver says was reset, unless records were lost: a lost record may have
// been an XID of that GPU after the reset, so the history is kept whole
// until a reset line comes in a read with nothing lost. It does no I/O.
func (st *State) Advance(bootID string, k KernelLog) (fresh []XID, lost []Gap) {
	if st.BootID != bootID {
		*st = State{BootID: bootID, Streaks: st.Streaks}
	}
	if st.History == nil {
		st.History = map[string][]XID{}
	}
	lost = unseen(k, st.Next)
	for _, rec := range k.Records {
		if rec.Seq < st.Next {
			continue
		}
		if bus, ok := ParseReset(rec); ok {
			if len(lost) == 0 {
				delete(st.History, bus)
			}
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
