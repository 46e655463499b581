// Package drift is the drift record: what changed under a job (a knob
// found with another value than the prolog set) and broken node
// invariants (record.go), kept by the epilog as JSON lines in the spool's
// drift.jsonl, which Append writes and Read and ReadFrom read back, a bad
// line costing only itself (file.go); and this node's drift history for
// whoever is on call, gpuprep-epilog --report (report.go, summary.go).
// The summary of many nodes' drift files is lib/fleet's; the metrics that
// count the records, lib/metrics'.
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
