// Package drift records what changed under a job (a knob found with another
// value than the prolog set) and broken node invariants, as JSON lines in the
// spool's drift.jsonl; prints them for whoever is on call; and writes
// gpuprep's Prometheus textfile metrics.
package drift

import "time"

// FileName is the drift history in the spool: one Record as JSON per line.
const FileName = "drift.jsonl"

// Kinds of record.
const (
	KindDrift     = "drift"     // a knob the prolog set was changed under a job
	KindInvariant = "invariant" // a node invariant the config names was broken
)

// Record is one drift event. Scope is what the knob applies to: a CPU list
// ("0-31"), a GPU index or UUID, or "node".
type Record struct {
	Time     time.Time `json:"time"`
	Node     string    `json:"node"`
	Job      string    `json:"job"`
	User     string    `json:"user"`
	Knob     string    `json:"knob"`
	Scope    string    `json:"scope"`
	Expected string    `json:"expected"`
	Found    string    `json:"found"`
	Kind     string    `json:"kind"`
}
