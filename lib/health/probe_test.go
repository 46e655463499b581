package health

import (
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/probe"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// eightGPUVerdict is a verdict of an 8-GPU node, every pair measured, with
// one finding on GPU 3.
func eightGPUVerdict(at time.Time) *probe.Verdict {
	r := &probe.Result{Started: at, Seconds: 14}
	for i := range 8 {
		bus := "0000:" + []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}[i] + ":00.0"
		g := probe.GPUResult{Target: probe.Target{Index: i, BusID: bus, Name: "NVIDIA H100 80GB HBM3", LinkGen: 5, LinkWidth: 16, NVLinks: 18}}
		g.H2D, g.D2H, g.D2D = probe.Measurement{GBps: 55}, probe.Measurement{GBps: 52}, probe.Measurement{GBps: 3000}
		g.Compute = probe.Compute{TFLOPS: 55, Ratio: 0.91}
		r.GPUs = append(r.GPUs, g)
		for j := range 8 {
			if j != i {
				r.Pairs = append(r.Pairs, probe.Pair{From: j, To: i, PeerAccess: true, Measurement: probe.Measurement{GBps: 360}})
			}
		}
	}
	v := &probe.Verdict{Time: at, BootID: "b", Driver: "550.54.15", Result: r, Floors: make([]probe.Floors, 8)}
	v.Findings = []probe.Finding{{Code: probe.CodeHBMSlow, GPU: 3, BusID: "0000:5d:00.0", Reason: "device memory 1000.0 GB/s, below 2010.0 GB/s"}}
	return v
}

func saveVerdict(t testing.TB, v *probe.Verdict) *state.Spool {
	sp, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.WriteJSON(probe.VerdictFile, v); err != nil {
		t.Fatal(err)
	}
	return sp
}

// The probe check on a job's GPUs: a finding on the job's GPU fails it,
// one on another GPU does not; an old verdict is a warning, never a pass.
func TestEvalProbe(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	v := eightGPUVerdict(now.Add(-time.Hour))
	gpuFacts := func(bus string) []GPUFacts { return []GPUFacts{{Dev: gpu.Device{BusID: bus}}} }
	h := config.HealthSection{ProbeMaxAge: 24 * time.Hour}
	for _, c := range []struct {
		name    string
		f       Facts
		status  Status
		code    string
		warning bool
	}{
		{"job on the slow GPU", Facts{GPUs: gpuFacts("0000:5d:00.0"), BootID: "b", Driver: "550.54.15"}, Fail, probe.CodeHBMSlow, false},
		{"job on another GPU", Facts{GPUs: gpuFacts("0000:18:00.0"), BootID: "b"}, OK, "", false},
		{"whole node", Facts{Whole: true, BootID: "b"}, Fail, probe.CodeHBMSlow, false},
		{"another boot", Facts{Whole: true, BootID: "c"}, Fail, CodeProbeUnknown, true},
		{"another driver", Facts{Whole: true, BootID: "b", Driver: "560.1"}, Fail, CodeProbeUnknown, true},
	} {
		c.f.Probe = ProbeFacts{Verdict: v, Now: now}
		rs := evalProbe(&c.f, Expect{Health: h})
		if rs[0].Status != c.status || rs[0].Code != c.code || (rs[0].Severity == "warn") != c.warning {
			t.Errorf("%s: %+v, want %s %s warning %v", c.name, rs[0], c.status, c.code, c.warning)
		}
	}
	f := Facts{Whole: true, Probe: ProbeFacts{Verdict: v, Now: now.Add(48 * time.Hour)}}
	if rs := evalProbe(&f, Expect{Health: h}); rs[0].Code != CodeProbeUnknown || !strings.Contains(rs[0].Reason, "probe_max_age") {
		t.Errorf("a verdict past probe_max_age: %+v", rs[0])
	}
	f = Facts{Whole: true, Probe: ProbeFacts{Now: now}}
	if rs := evalProbe(&f, Expect{Health: h}); rs[0].Status != Skip {
		t.Errorf("never probed, probes not due: %+v, want skipped", rs[0])
	}
	h.ProbeEvery = time.Hour
	if rs := evalProbe(&f, Expect{Health: h}); rs[0].Code != CodeProbeUnknown {
		t.Errorf("never probed, probes due: %+v, want PROBE_UNKNOWN", rs[0])
	}
}

// A drain for a probe's finding is lifted only on a passing verdict.
func TestDecideProbeDrain(t *testing.T) {
	node := slurm.NodeState{State: "IDLE+DRAIN", Reason: "gpuprep: HBM_SLOW investigate: GPU 3 (0000:5d:00.0): ..."}
	for _, c := range []struct {
		probe probe.Status
		want  Action
	}{{probe.StatusUnknown, Nothing}, {"", Nothing}, {probe.StatusFail, Nothing}, {probe.StatusPass, Resume}} {
		if d := Decide(&Report{Probe: c.probe}, node, true); d.Action != c.want {
			t.Errorf("verdict %q: %+v, want %s", c.probe, d, c.want)
		}
	}
	if !ProbeDrain("gpuprep-prolog: health: P2P_SLOW check_hardware: ...") || ProbeDrain("gpuprep: XID79 reboot: ...") || ProbeDrain("HBM_SLOW") {
		t.Error("ProbeDrain")
	}
}

// ReadVerdict reads the header and findings of a saved verdict.
func TestReadVerdict(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	v, err := ReadVerdict(saveVerdict(t, eightGPUVerdict(at)))
	if err != nil || v == nil || !v.Time.Equal(at) || len(v.Findings) != 1 || v.Result != nil {
		t.Fatalf("ReadVerdict: %+v %v", v, err)
	}
}

// BenchmarkReadVerdict: what the prolog pays at every job to read the
// verdict of an 8-GPU node (56 peer copies).
func BenchmarkReadVerdict(b *testing.B) {
	sp := saveVerdict(b, eightGPUVerdict(time.Now()))
	for b.Loop() {
		if v, err := ReadVerdict(sp); err != nil || v == nil {
			b.Fatal(err)
		}
	}
}
