package metrics

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMetricsPassPromtool: every writer's file, with every family filled
// in, passes `promtool check metrics` (Prometheus's own parser and its
// linter, promlint: names, units, _total on counters, HELP on every
// family, snake_case). Debian's prometheus package ships promtool;
// test/install-deps.sh installs it. In CI a missing promtool is a failure.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found (Debian: apt-get install prometheus; make deps)")
		}
		t.Skip("promtool not found (Debian: apt-get install prometheus)")
	}
	m := testMetrics()
	m.AddFallback("benchmark")
	seen := map[string]bool{}
	g := GPULabels{GPU: "0", UUID: "GPU-1", BusID: "00000000:18:00.0"}
	m.SetCheck("ecc_volatile", g, StatusFatal, Failure{"ECC_UNCORRECTABLE", "reset_gpu"}, false, t0, seen)
	m.SetCheck("swap", GPULabels{}, StatusOK, Failure{}, false, t0, seen)
	m.AddXID(79, "fatal", g)
	drained, saved := 0, 1
	m.Drained, m.StateSaved = &drained, &saved
	m.KmsgLost = 3
	m.AddXIDClear(ClearByAdmin, g)
	m.SetRun(HookHealth, t0, time.Second, true)
	m.Probe = testProbe()
	for _, hook := range []string{HookProlog, HookEpilog, HookHealth} {
		text := Format(hook, testNode, m, Build{Version: "1.0.0", Commit: "abc"})
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s\n%s", PromFile(hook), err, out, text)
		}
	}
}
