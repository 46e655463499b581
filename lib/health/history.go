package health

import (
	"encoding/json"
	"slices"

	"gpuprep/lib/gpu"
)

// XIDRecord is what a GPU's history keeps of one Xid code: when it came
// first and last (kernel log sequence number and microseconds since boot),
// how many times, and what its last line said.
type XIDRecord struct {
	Code      int    `json:"code"`
	Count     uint64 `json:"count"`
	FirstSeq  uint64 `json:"first_seq"`
	FirstUSec uint64 `json:"first_usec"`
	LastSeq   uint64 `json:"last_seq"`
	LastUSec  uint64 `json:"last_usec"`
	MIG       string `json:"mig,omitempty"` // of the last one
	Text      string `json:"text"`          // the last one's, clipped
	// To is the action an Xid 154 (GPU_RECOVERY_ACTION_CHANGED) changed
	// to, by its last line.
	To *gpu.RecoveryAction `json:"to_action,omitempty"`
	// Severity is what the record means now ([health] xid_fatal, xid_warn,
	// xid_other; Xid 154 by To): set in a report, not kept.
	Severity string `json:"severity,omitempty"`
}

// GPUHistory is one GPU's Xid records, one per code, in code order.
type GPUHistory []XIDRecord

// add counts x in its code's record (a new record for a new code).
func (h GPUHistory) add(x XID) GPUHistory { return h.merge(x.record()) }

// record is x as a record of one occurrence.
func (x XID) record() XIDRecord {
	return XIDRecord{Code: x.Code, Count: 1, FirstSeq: x.Seq, FirstUSec: x.USec, LastSeq: x.Seq, LastUSec: x.USec, MIG: x.MIG, Text: x.Text, To: x.To}
}

// split is h's records last seen at or above seq (kept) and below it (gone).
func (h GPUHistory) split(seq uint64) (kept, gone GPUHistory) {
	for _, r := range h {
		if r.LastSeq >= seq {
			kept = append(kept, r)
		} else {
			gone = append(gone, r)
		}
	}
	return kept, gone
}

// UnmarshalJSON reads a GPU's records, and the list an older release kept
// (each GPU's last 32 Xids, one object each with "seq" and "usec" and no
// "count"), which it folds into one record per code.
func (h *GPUHistory) UnmarshalJSON(b []byte) error {
	var entries []struct {
		XIDRecord
		Seq  uint64 `json:"seq"`
		USec uint64 `json:"usec"`
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		return err
	}
	var out GPUHistory
	for _, e := range entries {
		if e.Count > 0 {
			out = out.merge(e.XIDRecord)
			continue
		}
		out = out.merge(XID{Code: e.Code, Seq: e.Seq, USec: e.USec, MIG: e.MIG, Text: e.Text, To: e.To}.record())
	}
	*h = out
	return nil
}

// merge adds the occurrences r counts to its code's record.
func (h GPUHistory) merge(r XIDRecord) GPUHistory {
	r.Severity = ""
	i, found := slices.BinarySearchFunc(h, r.Code, func(x XIDRecord, code int) int { return x.Code - code })
	if !found {
		return slices.Insert(h, i, r)
	}
	x := &h[i]
	x.Count += r.Count
	if r.FirstSeq < x.FirstSeq {
		x.FirstSeq, x.FirstUSec = r.FirstSeq, r.FirstUSec
	}
	if r.LastSeq >= x.LastSeq {
		x.LastSeq, x.LastUSec, x.MIG, x.Text, x.To = r.LastSeq, r.LastUSec, r.MIG, r.Text, r.To
	}
	return h
}
