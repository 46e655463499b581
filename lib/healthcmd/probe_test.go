package healthcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/hooktest"
	"gpuprep/lib/cuda"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/probe"
	"gpuprep/lib/state"
)

// The probes run against the mock GPUs' fake CUDA driver here (a build
// with -tags gpuprep_mock does the same: cuda_mock.go), each measurement
// short.
func init() {
	openCUDA = func(_ string, root host.Root, devs []gpu.Device) (cuda.Driver, error) {
		return gpumock.FakeCUDA(root, devs), nil
	}
	probeSpan = 4 * time.Millisecond
}

// probeOut is what a test reads of gpuprep-health --probe --json.
type probeOut struct {
	code    int
	stderr  string
	Probed  bool           `json:"probed"`
	Why     string         `json:"why"`
	Drained bool           `json:"drained_for_probe"`
	Refused []refusedGPU   `json:"refused"`
	Verdict *probe.Verdict `json:"verdict"`
	Health  *healthOut     `json:"health"`
}

func (n *standingNode) probe(extra ...string) probeOut {
	n.t.Helper()
	code, out, stderr := n.healthRaw(nil, append([]string{"--probe", "--json"}, extra...)...)
	p := probeOut{code: code, stderr: stderr}
	if out != "" {
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			n.t.Fatalf("gpuprep-health --probe: exit %d, %v\n%s\n%s", code, err, out, stderr)
		}
	}
	return p
}

// setRates makes the fake CUDA driver measure rates, by bus id.
func (n *standingNode) setRates(rates map[string]gpumock.CUDARates) {
	n.t.Helper()
	if err := gpumock.WriteCUDARates(host.NewRoot(n.root), rates); err != nil {
		n.t.Fatal(err)
	}
}

func (n *standingNode) verdictOnDisk() *probe.Verdict {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.spool, probe.VerdictFile))
	if err != nil {
		return nil
	}
	var v probe.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		n.t.Fatal(err)
	}
	return &v
}

// An idle node: the probe drains it ("gpuprep: probing"), probes every
// GPU, saves a passing verdict and the health run after it resumes the node.
func TestProbeDrainsProbesAndResumes(t *testing.T) {
	n := newStandingNode(t)
	p := n.probe()
	if p.code != 0 || !p.Probed || p.Verdict == nil || !p.Verdict.Pass {
		t.Fatalf("probe: exit %d probed %v verdict %+v %s", p.code, p.Probed, p.Verdict, p.stderr)
	}
	if len(n.slurm.drains) != 1 || n.slurm.drains[0] != ProbingReason || n.slurm.resumes != 1 {
		t.Errorf("drains %q, resumes %d: want one drain %q, then a resume", n.slurm.drains, n.slurm.resumes, ProbingReason)
	}
	if st, _ := n.slurm.node(); st != "IDLE" {
		t.Errorf("node %s after a passing probe, want IDLE", st)
	}
	v := n.verdictOnDisk()
	if v == nil || len(v.Result.GPUs) != 8 || len(v.Result.Pairs) != 56 || v.BootID == "" || v.Driver == "" {
		t.Fatalf("saved verdict %+v: want 8 GPUs, 56 peer copies, the boot id and driver", v)
	}
	if fi, err := os.Stat(filepath.Join(n.spool, probe.VerdictFile)); err != nil || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("verdict file mode %v (%v): no one but root may write it", fi.Mode(), err)
	}
	h := n.health(nil)
	if !hasResult(h, "probe", "ok") {
		t.Errorf("gpuprep-health after the probe: %+v, want the probe check ok", h.Health.Results)
	}
}

func hasResult(h healthOut, check, status string) bool {
	for _, r := range h.Health.Results {
		if r.Check == check && r.Status == status {
			return true
		}
	}
	return false
}

// A slow GPU: the verdict fails with HBM_SLOW, the node is drained with
// that code; a job on that GPU fails its prolog, one on another GPU runs.
// The drain stands while the verdict says nothing better: not because the
// other checks pass, and not when the verdict ages into unknown (another
// boot). A newer passing probe lifts it.
func TestProbeSlowGPUDrainsUntilANewerPassingProbe(t *testing.T) {
	n := newStandingNode(t)
	n.setRates(map[string]gpumock.CUDARates{"0000:5d:00.0": {CopyGBps: 500}})
	p := n.probe()
	if p.code != 1 || p.Verdict == nil || p.Verdict.Pass || len(p.Verdict.Findings) != 1 || p.Verdict.Findings[0].Code != probe.CodeHBMSlow {
		t.Fatalf("probe of a slow GPU: exit %d verdict %+v", p.code, p.Verdict)
	}
	st, reason := n.slurm.node()
	if !strings.HasPrefix(reason, "gpuprep: HBM_SLOW investigate: GPU 3 (0000:5d:00.0): device memory 1000.0 GB/s, below 2010.0") || !strings.Contains(st, "DRAIN") {
		t.Fatalf("node %s %q, want drained for HBM_SLOW on GPU 3", st, reason)
	}
	if code, stderr := n.prolog("3"); code == 0 || !strings.Contains(stderr, "HBM_SLOW") {
		t.Errorf("prolog of a job on GPU 3: exit %d %q, want a failure naming HBM_SLOW", code, stderr)
	}
	if code, stderr := n.prolog("0"); code != 0 {
		t.Errorf("prolog of a job on GPU 0: exit %d %s", code, stderr)
	}
	if h := n.health(nil); h.Decision.Action != "none" {
		t.Errorf("health run on the failed verdict: %+v, want the drain left", h.Decision)
	}
	hooktest.WriteRootFile(t, n.root, "proc/sys/kernel/random/boot_id", "99999999-2222-3333-4444-555555555555\n")
	h := n.health(nil)
	if h.Decision.Action != "none" || !strings.Contains(h.Decision.Why, "only a newer passing probe verdict lifts it") {
		t.Errorf("health run after a reboot (verdict unknown): %+v, want the drain left", h.Decision)
	}
	if !hasResult(h, "probe", "fail") {
		t.Errorf("verdict of another boot: %+v, want the probe check failing (unknown, a warning)", h.Health.Results)
	}
	n.setRates(nil)
	if p := n.probe(); p.code != 0 || !p.Verdict.Pass {
		t.Fatalf("probe after the repair: exit %d %+v", p.code, p.Verdict)
	}
	if st, _ := n.slurm.node(); st != "IDLE" {
		t.Errorf("node %s after a passing probe, want IDLE (resumed)", st)
	}
}

// A probe runs only where no job is, or can start: a busy node, a job
// holding gpuprep's settings, an admin's drain are left alone; a job that
// lands as the node is drained makes it lift its drain.
func TestProbeOnlyOnAnIdleNode(t *testing.T) {
	for _, c := range []struct {
		name, state, reason, want string
	}{
		{"busy", "MIXED", "", "Slurm shows the node MIXED"},
		{"admin's drain", "IDLE+DRAIN", "maintenance", "drained by someone else"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newStandingNode(t)
			n.slurm.state, n.slurm.reason = c.state, c.reason
			p := n.probe()
			if p.code != 0 || p.Probed || !strings.Contains(p.Why, c.want) || len(n.slurm.drains) != 0 || n.verdictOnDisk() != nil {
				t.Errorf("exit %d probed %v why %q drains %q", p.code, p.Probed, p.Why, n.slurm.drains)
			}
		})
	}
	t.Run("job slips in", func(t *testing.T) {
		n := newStandingNode(t)
		old := slurmCtl.drain
		slurmCtl.drain = func(ctx context.Context, node, reason string) error {
			err := old(ctx, node, reason)
			n.slurm.state = "MIXED+DRAIN"
			return err
		}
		p := n.probe()
		if p.Probed || n.slurm.resumes != 1 || !strings.Contains(p.Why, "a job started") {
			t.Errorf("probed %v resumes %d why %q: want the drain lifted and no probe", p.Probed, n.slurm.resumes, p.Why)
		}
	})
}

// A GPU a process uses is not probed (--force probes it, and the verdict
// says it was forced); a GPU an MPS server serves is never probed.
func TestProbeLeavesBusyGPUs(t *testing.T) {
	n := newStandingNode(t)
	hooktest.InjectFault(t, n.root, 2, gpumock.Faults{Processes: []int{4242}})
	hooktest.InjectFault(t, n.root, 5, gpumock.Faults{Processes: []int{4243}})
	hooktest.WriteRootFile(t, n.root, "proc/4243/comm", "nvidia-cuda-mps-server\n")
	p := n.probe()
	if len(p.Refused) != 2 || !strings.Contains(p.Refused[0].Why, "used by pid 4242") || !strings.Contains(p.Refused[1].Why, "MPS server") {
		t.Fatalf("refused %+v, want GPUs 2 (pid 4242) and 5 (MPS)", p.Refused)
	}
	if len(p.Verdict.Result.GPUs) != 6 || p.Verdict.Forced {
		t.Errorf("probed %d GPUs forced %v, want 6, not forced", len(p.Verdict.Result.GPUs), p.Verdict.Forced)
	}
	p = n.probe("--force")
	if len(p.Refused) != 1 || len(p.Verdict.Result.GPUs) != 7 || !p.Verdict.Forced {
		t.Errorf("--force: refused %+v, %d GPUs, forced %v: want only the MPS GPU refused", p.Refused, len(p.Verdict.Result.GPUs), p.Verdict.Forced)
	}
}

// While a probe runs, gpuprep-health leaves its drain alone; once it no
// longer holds its lock (killed), a health run lifts the drain.
func TestHealthLeavesAProbesDrain(t *testing.T) {
	n := newStandingNode(t)
	n.slurm.state, n.slurm.reason = "IDLE+DRAIN", ProbingReason
	sp, err := state.Open(n.spool)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	unlock, err := sp.TryLock(ProbeLock)
	if err != nil {
		t.Fatal(err)
	}
	if h := n.health(nil); h.Decision.Action != "none" || !strings.Contains(h.Decision.Why, "a probe is running") {
		t.Errorf("health run during a probe: %+v", h.Decision)
	}
	if p := n.probe(); p.code != 0 || p.Probed {
		t.Errorf("a second probe: exit %d probed %v, want it to stop", p.code, p.Probed)
	}
	unlock()
	if h := n.health(nil); h.Decision.Action != "resume" || !h.Done {
		t.Errorf("health run after the probe died: %+v, want the drain lifted", h.Decision)
	}
}

// Only root probes; --force needs --probe.
func TestProbeFlags(t *testing.T) {
	n := newStandingNode(t)
	old := euid
	euid = func() int { return 1000 }
	p := n.probe()
	euid = old
	if p.code != 2 || !strings.Contains(p.stderr, "root only") || len(n.slurm.drains) != 0 {
		t.Errorf("a user's --probe: exit %d %q drains %q", p.code, p.stderr, n.slurm.drains)
	}
	if code, _, stderr := n.healthRaw(nil, "--force"); code != 2 || !strings.Contains(stderr, "--force goes with --probe") {
		t.Errorf("--force alone: exit %d %q", code, stderr)
	}
}

// With [health] probe_every, slurmd's gpuprep-health starts a probe in the
// background on an idle node whose verdict is missing or older, and not on
// a busy one.
func TestHealthStartsDueProbes(t *testing.T) {
	n := newStandingNode(t)
	n.setConfig("[health]\nprobe_every = \"1h\"\n")
	var started [][]string
	old := startDetached
	t.Cleanup(func() { startDetached = old })
	startDetached = func(exe string, args []string) (int, error) {
		started = append(started, args)
		return 4321, nil
	}
	n.health(nil)
	if len(started) != 1 || started[0][0] != "--probe" || !strings.Contains(strings.Join(started[0], " "), "--node gpu01") {
		t.Fatalf("started %q, want one --probe of gpu01", started)
	}
	if p := n.probe(); !p.Probed {
		t.Fatalf("probe: %+v", p)
	}
	n.health(nil)
	n.slurm.state = "MIXED"
	n.health(nil)
	if len(started) != 1 {
		t.Errorf("started %q: want none with a fresh verdict or on a busy node", started)
	}
}

// fakeLister is a backend that lists devs and their processes.
type fakeLister struct {
	devs  []gpu.Device
	procs map[int][]int
}

func (f fakeLister) Name() string                       { return "fake" }
func (f fakeLister) Devices() ([]gpu.Device, error)     { return f.devs, nil }
func (f fakeLister) Close() error                       { return nil }
func (f fakeLister) Processes(index int) ([]int, error) { return f.procs[index], nil }

// A GPU in MIG mode is never probed (CUDA sees its instances, not it),
// --force or not.
func TestProbeLeavesMIGGPUs(t *testing.T) {
	devs := []gpu.Device{{Index: 0, BusID: "0000:18:00.0"}, {Index: 1, BusID: "0000:2a:00.0", MIG: gpu.MIGState{Current: true}}}
	run := &probeRun{}
	free, forced := refuseBusy(host.NewRoot(t.TempDir()), fakeLister{devs: devs}, devs, true, run)
	if len(free) != 1 || free[0].Index != 0 || forced || len(run.Refused) != 1 || !strings.Contains(run.Refused[0].Why, "MIG mode") {
		t.Errorf("free %+v forced %v refused %+v: want GPU 1 refused for MIG mode", free, forced, run.Refused)
	}
}

// With DCGM installed, its diagnostic runs with the probes: a failed test
// is a finding of the verdict, and the node drains with its code.
func TestProbeRunsDCGMWhenInstalled(t *testing.T) {
	n := newStandingNode(t)
	dir := t.TempDir()
	out, err := filepath.Abs("../probetools/testdata/dcgmi_diag_r2_v4_fail.json")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in --version|-v) echo 'dcgmi  version: 4.2.3'; exit 0;; esac\ncat " + out + "\n"
	if err := os.WriteFile(filepath.Join(dir, "dcgmi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	p := n.probe()
	if p.Verdict == nil || len(p.Verdict.Tools) == 0 || p.Verdict.Tools[0].Tool != "dcgmi" || p.Verdict.Pass {
		t.Fatalf("verdict %+v: want dcgmi's failed run in it", p.Verdict)
	}
	if _, reason := n.slurm.node(); !strings.HasPrefix(reason, "gpuprep: DCGM_DIAG_FAILED investigate") {
		t.Errorf("drain reason %q, want DCGM_DIAG_FAILED", reason)
	}
	n.setConfig("[health]\nprobe_tools = false\n")
	n.slurm.adminResume()
	if p := n.probe(); len(p.Verdict.Tools) != 0 || !p.Verdict.Pass {
		t.Errorf("probe_tools = false: tools %+v pass %v", p.Verdict.Tools, p.Verdict.Pass)
	}
}
