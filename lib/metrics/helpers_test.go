package metrics

import (
	"os"
	"testing"
	"time"

	"gpuprep/internal/spooltest"
	"gpuprep/lib/drift"
	"gpuprep/lib/state"
)

func newSpool(t *testing.T) *state.Spool { return spooltest.New(t) }

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func rec(min int, node, knob, scope, expected, found string) drift.Record {
	return drift.Record{Time: t0.Add(time.Duration(min) * time.Minute), Node: node, Job: "1001", User: "alice",
		Knob: knob, Scope: scope, Expected: expected, Found: found, Kind: drift.KindDrift}
}

// history is five drift records of four nodes, one of them an invariant.
func history() []drift.Record {
	inv := rec(30, "gpu03", "gpu.persistence", "GPU-5c1f", "on", "off")
	inv.Kind = drift.KindInvariant
	return []drift.Record{
		rec(0, "gpu01", "cpu.governor", "0-31", "performance", "powersave"),
		rec(10, "gpu02", "cpu.governor", "0-31", "performance", "schedutil"),
		rec(20, "gpu01", "thp.enabled", "node", "never", ""),
		inv,
		rec(40, "gpu04", "cpu.governor", "0-31", "performance", "power save\t\x1b[31m"),
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
