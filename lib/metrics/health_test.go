package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHealthMetrics: the health families parse, carry dcgm-exporter's GPU
// labels, keep the worst of several results of one check and GPU, drop a
// skipped check's status but keep its last failure, and count Xids.
func TestHealthMetrics(t *testing.T) {
	var m Metrics
	g3 := GPULabels{GPU: "3", UUID: "GPU-3", BusID: "00000000:9A:00.0"}
	seen := map[string]bool{}
	m.SetCheck("ecc_volatile", g3, StatusFatal, Failure{"ECC_UNCORRECTABLE", "reset_gpu"}, false, t0, seen)
	m.SetCheck("ib_ports", GPULabels{}, StatusOK, Failure{}, false, t0, seen)
	m.SetCheck("ib_ports", GPULabels{}, StatusWarn, Failure{"IB_PORT_DOWN", "check_hardware"}, false, t0, seen) // a second port
	m.SetCheck("swap", GPULabels{}, StatusOK, Failure{}, true, t0, seen)                                        // skipped, never seen: no series
	m.AddXID(79, "fatal", g3)
	m.AddXID(79, "fatal", g3)
	m.AddXID(13, "warn", GPULabels{BusID: "00000000:18:00.0"}) // a GPU NVML no longer lists
	m.AddXIDClear(ClearByAdmin, g3)
	m.AddXIDClear(ClearByAdmin, g3)
	m.AddXIDClear(ClearByDriver, g3)
	m.KmsgLost = 49
	saved := 0
	m.StateSaved = &saved
	text := string(Format(HookHealth, testNode, m, Build{Version: "dev"}))
	got, err := parseProm(text)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, text)
	}
	t0s := float64(t0.Unix())
	want := map[string]float64{
		`gpuprep_health_check_status{UUID="GPU-3",check="ecc_volatile",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0"}`:                                             2,
		`gpuprep_health_check_status{check="ib_ports",hook="health"}`:                                                                                                    1,
		`gpuprep_health_check_last_failure_timestamp_seconds{UUID="GPU-3",check="ecc_volatile",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0"}`:                     t0s,
		`gpuprep_health_check_last_failure_timestamp_seconds{check="ib_ports",hook="health"}`:                                                                            t0s,
		`gpuprep_xid_events_total{UUID="GPU-3",code="79",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0",severity="fatal"}`:                                          2,
		`gpuprep_xid_events_total{code="13",hook="health",pci_bus_id="00000000:18:00.0",severity="warn"}`:                                                                1,
		`gpuprep_build_info{commit="",hook="health",version="dev"}`:                                                                                                      1,
		`gpuprep_xid_clears_total{UUID="GPU-3",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0",source="admin"}`:                                                      2,
		`gpuprep_xid_clears_total{UUID="GPU-3",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0",source="driver"}`:                                                     1,
		`gpuprep_kmsg_lost_records_total{hook="health"}`:                                                                                                                 49,
		`gpuprep_health_state_saved{hook="health"}`:                                                                                                                      0,
		`gpuprep_health_failure_info{UUID="GPU-3",action="reset_gpu",check="ecc_volatile",code="ECC_UNCORRECTABLE",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0"}`: 1,
		`gpuprep_health_failure_info{action="check_hardware",check="ib_ports",code="IB_PORT_DOWN",hook="health"}`:                                                        1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d:\n%s", len(got), len(want), text)
	}

	// The next run: ECC passes, InfiniBand is skipped. The status follows;
	// the last failures stay.
	seen = map[string]bool{}
	m.SetCheck("ecc_volatile", g3, StatusOK, Failure{}, false, t0.Add(time.Hour), seen)
	m.SetCheck("ib_ports", GPULabels{}, StatusOK, Failure{}, true, t0.Add(time.Hour), seen)
	drained := 1
	m.Drained = &drained
	got, err = parseProm(string(Format(HookHealth, testNode, m, Build{Version: "dev"})))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{
		`gpuprep_health_check_status{UUID="GPU-3",check="ecc_volatile",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0"}`:                         0,
		`gpuprep_health_check_last_failure_timestamp_seconds{UUID="GPU-3",check="ecc_volatile",gpu="3",hook="health",pci_bus_id="00000000:9A:00.0"}`: t0s,
		`gpuprep_health_check_last_failure_timestamp_seconds{check="ib_ports",hook="health"}`:                                                        t0s,
		`gpuprep_node_drained{hook="health"}`: 1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("second run: %s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got[`gpuprep_health_check_status{check="ib_ports",hook="health"}`]; ok {
		t.Error("a skipped check kept its status series")
	}
	for k := range got {
		if strings.HasPrefix(k, "gpuprep_health_failure_info{") {
			t.Errorf("second run: %s stays after the check passed or was skipped", k)
		}
	}
	// Only gpuprep-health's file has gpuprep_node_drained.
	got, _ = parseProm(string(Format(HookProlog, testNode, m, Build{})))
	for k := range got {
		if len(k) > len(MetricNodeDrained) && k[:len(MetricNodeDrained)] == MetricNodeDrained {
			t.Errorf("prolog's file has %s", k)
		}
	}
}

// TestMetricsTakeOverLegacyFile: on the first run after an upgrade the
// epilog carries on the counters of the one shared metrics.json; the
// others start from zero.
func TestMetricsTakeOverLegacyFile(t *testing.T) {
	sp := newSpool(t)
	legacy := `{"drift_events":{"cpu.governor":7},"runs":{"prolog":{"ok":true},"epilog":{"ok":false}},"dead_jobs":{"age":2}}`
	os.WriteFile(filepath.Join(sp.Dir(), LegacyStateFile), []byte(legacy), 0o600)
	m, _, err := Load(sp, HookEpilog)
	if err != nil || m.DriftEvents["cpu.governor"] != 7 || m.DeadJobs["age"] != 2 || len(m.Runs) != 1 || m.Runs[HookEpilog].OK {
		t.Fatalf("epilog: %+v %v", m, err)
	}
	p, _, err := Load(sp, HookProlog)
	if err != nil || p.DriftEvents != nil || p.DeadJobs != nil {
		t.Fatalf("prolog: %+v %v", p, err)
	}
}
