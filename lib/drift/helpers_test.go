package drift

import (
	"testing"
	"time"

	"gpuprep/internal/spooltest"
	"gpuprep/lib/state"
)

func newSpool(t *testing.T) *state.Spool { return spooltest.New(t) }

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func rec(min int, node, knob, scope, expected, found string) Record {
	return Record{Time: t0.Add(time.Duration(min) * time.Minute), Node: node, Job: "1001", User: "alice",
		Knob: knob, Scope: scope, Expected: expected, Found: found, Kind: KindDrift}
}
