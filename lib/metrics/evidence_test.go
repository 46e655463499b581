package metrics

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var (
	jobG0 = GPULabels{GPU: "0", UUID: "GPU-0", BusID: "00000000:18:00.0"}
	jobG1 = GPULabels{GPU: "1", UUID: "GPU-1", BusID: "00000000:2A:00.0"}
)

func joules(j float64) *float64 { return &j }

// testJobGPUs is three jobs on GPU 1 (one of unknown energy, one whose
// throttle counters were unknown) and one on GPU 0, counted out of order.
func testJobGPUs() Metrics {
	var m Metrics
	m.AddJobGPU(jobG1, 3600, joules(1.8e6), map[string]float64{"power_cap": 60, "sw_thermal": 900, "hw_thermal": 0, "power_brake": 0, "sync_boost": 0})
	m.AddJobGPU(jobG0, 7200.5, joules(2.5e6), map[string]float64{"power_cap": 3600, "sw_thermal": 0, "hw_thermal": 0, "power_brake": 0, "sync_boost": 0})
	m.AddJobGPU(jobG1, 1800, nil, map[string]float64{"power_cap": 0, "sw_thermal": 450, "hw_thermal": 30, "power_brake": 0, "sync_boost": 0})
	m.AddJobGPU(jobG1, 600, joules(2e5), nil)
	return m
}

// TestJobGPUMetrics: the job GPU counters parse, carry the GPU labels and
// no job's, sum the jobs, and come by bus id, reasons in a fixed order.
func TestJobGPUMetrics(t *testing.T) {
	text := string(Format(HookEpilog, testNode, testJobGPUs(), Build{Version: "dev"}))
	got, err := parseProm(text)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, text)
	}
	const (
		l0 = `UUID="GPU-0",gpu="0",hook="epilog",pci_bus_id="00000000:18:00.0"`
		l1 = `UUID="GPU-1",gpu="1",hook="epilog",pci_bus_id="00000000:2A:00.0"`
	)
	want := map[string]float64{
		`gpuprep_job_gpu_jobs_total{` + l0 + `}`:                                 1,
		`gpuprep_job_gpu_jobs_total{` + l1 + `}`:                                 3,
		`gpuprep_job_gpu_seconds_total{` + l0 + `}`:                              7200.5,
		`gpuprep_job_gpu_seconds_total{` + l1 + `}`:                              6000,
		`gpuprep_job_gpu_energy_joules_total{` + l0 + `}`:                        2.5e6,
		`gpuprep_job_gpu_energy_joules_total{` + l1 + `}`:                        2e6,
		`gpuprep_job_gpu_energy_unknown_jobs_total{` + l0 + `}`:                  0,
		`gpuprep_job_gpu_energy_unknown_jobs_total{` + l1 + `}`:                  1,
		`gpuprep_job_gpu_throttle_seconds_total{` + l1 + `,reason="sw_thermal"}`: 1350,
		`gpuprep_job_gpu_throttle_seconds_total{` + l1 + `,reason="hw_thermal"}`: 30,
		`gpuprep_job_gpu_throttle_seconds_total{` + l1 + `,reason="power_cap"}`:  60,
	}
	for _, l := range []string{l0, l1} {
		for _, r := range []string{"power_brake", "sync_boost"} {
			want[`gpuprep_job_gpu_throttle_seconds_total{`+l+`,reason="`+r+`"}`] = 0
		}
	}
	for _, r := range []string{"sw_thermal", "hw_thermal"} {
		want[`gpuprep_job_gpu_throttle_seconds_total{`+l0+`,reason="`+r+`"}`] = 0
	}
	want[`gpuprep_job_gpu_throttle_seconds_total{`+l0+`,reason="power_cap"}`] = 3600
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "gpuprep_job_gpu_") {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("%d job GPU series, want %d:\n%s", n, len(want), text)
	}
	for k, v := range want {
		k = sortedLabels(t, k)
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for _, order := range []string{
		`gpuprep_job_gpu_jobs_total{hook="epilog",Hostname="gpu01",slurm_node="node-a17",gpu="0"`,
		`gpuprep_job_gpu_jobs_total{hook="epilog",Hostname="gpu01",slurm_node="node-a17",gpu="1"`,
		`reason="power_cap",Hostname="gpu01",slurm_node="node-a17",gpu="0"`,
		`reason="sync_boost",Hostname="gpu01",slurm_node="node-a17",gpu="0"`,
		`reason="power_cap",Hostname="gpu01",slurm_node="node-a17",gpu="1"`,
		`reason="sw_thermal",Hostname="gpu01",slurm_node="node-a17",gpu="1"`,
		`reason="hw_thermal",Hostname="gpu01",slurm_node="node-a17",gpu="1"`,
		`reason="power_brake",Hostname="gpu01",slurm_node="node-a17",gpu="1"`,
	} {
		if !strings.Contains(text, order) {
			t.Errorf("no %q in:\n%s", order, text)
		}
	}
	if strings.Index(text, `reason="power_cap",Hostname="gpu01",slurm_node="node-a17",gpu="1"`) > strings.Index(text, `reason="sw_thermal",Hostname="gpu01",slurm_node="node-a17",gpu="1"`) {
		t.Errorf("reasons not in ThrottleReasons' order:\n%s", text)
	}
	if strings.Contains(text, "job=") || strings.Contains(text, "job_id") {
		t.Errorf("a job label:\n%s", text)
	}
}

// TestJobGPUMetricsEmpty: no job counted yet is HELP and TYPE only; the
// other writers' files have none of the families.
func TestJobGPUMetricsEmpty(t *testing.T) {
	text := string(Format(HookEpilog, testNode, Metrics{}, Build{}))
	if strings.Contains(text, "\ngpuprep_job_gpu_") {
		t.Errorf("no jobs, yet job GPU samples:\n%s", text)
	}
	for _, name := range []string{MetricJobGPUJobs, MetricJobGPUSeconds, MetricJobGPUEnergy, MetricJobGPUEnergyUnknown, MetricJobGPUThrottle} {
		if !strings.Contains(text, "# HELP "+name+" ") || !strings.Contains(text, "# TYPE "+name+" counter\n") {
			t.Errorf("no HELP/TYPE counter for %s", name)
		}
	}
	for _, hook := range []string{HookProlog, HookHealth} {
		if text := string(Format(hook, testNode, testJobGPUs(), Build{})); strings.Contains(text, "gpuprep_job_gpu_") {
			t.Errorf("%s's file has job GPU families", hook)
		}
	}
}

// TestJobGPUCountersGrow: the counters survive Load and Save, and every
// series only grows from one epilog's file to the next, even when a
// figure is negative, NaN or infinite, or a reason is new.
func TestJobGPUCountersGrow(t *testing.T) {
	sp := newSpool(t)
	var last map[string]float64
	steps := []func(m *Metrics){
		func(m *Metrics) { *m = testJobGPUs() },
		func(m *Metrics) { m.AddJobGPU(jobG0, -5, joules(-1), map[string]float64{"power_cap": math.NaN()}) },
		func(m *Metrics) {
			m.AddJobGPU(jobG1, math.Inf(1), nil, map[string]float64{"sw_thermal": 10, "new_reason": 1})
		},
		func(m *Metrics) {},
	}
	for i, step := range steps {
		m, _, err := Load(sp, HookEpilog)
		if err != nil {
			t.Fatal(err)
		}
		step(&m)
		if err := Save(sp, HookEpilog, m); err != nil {
			t.Fatal(err)
		}
		m2, _, err := Load(sp, HookEpilog)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseProm(string(Format(HookEpilog, testNode, m2, Build{})))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for k, v := range last {
			if g, ok := got[k]; strings.HasPrefix(k, "gpuprep_job_gpu_") && (!ok || g < v) {
				t.Errorf("step %d: %s went from %v to %v (present %v)", i, k, v, g, ok)
			}
		}
		last = got
	}
	if j := last[sortedLabels(t, `gpuprep_job_gpu_jobs_total{hook="epilog",gpu="0",UUID="GPU-0",pci_bus_id="00000000:18:00.0"}`)]; j != 2 {
		t.Errorf("GPU 0: %v jobs, want 2", j)
	}
	if s := last[sortedLabels(t, `gpuprep_job_gpu_throttle_seconds_total{hook="epilog",gpu="1",UUID="GPU-1",pci_bus_id="00000000:2A:00.0",reason="new_reason"}`)]; s != 1 {
		t.Errorf("GPU 1's new reason: %v, want 1", s)
	}
}

// TestJobGPUMetricsPassPromtool: the epilog's file with job GPU counters
// passes `promtool check metrics` (as TestMetricsPassPromtool).
func TestJobGPUMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found (Debian: apt-get install prometheus; make deps)")
		}
		t.Skip("promtool not found (Debian: apt-get install prometheus)")
	}
	text := Format(HookEpilog, testNode, testJobGPUs(), Build{Version: "1.0.0", Commit: "abc"})
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\n%s", err, out, text)
	}
}
