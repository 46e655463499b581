package healthcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gpuprep/internal/fulldisk"
	"gpuprep/internal/gpumock"
	"gpuprep/internal/hooktest"
	"gpuprep/lib/cli"
	"gpuprep/lib/slurm"
)

// Issue 30, items 2 to 5: a fatal Xid stands until the GPU is cleared
// (a reboot, an admin's gpuprep-health --clear, or the driver's recovery
// action back to none after it was not), whatever else the kernel log
// holds, whether or not a drain worked, and whether or not the spool can
// be written. Each test runs gpuprep-health as slurmd runs it (no
// --no-drain) against a simulated Slurm node, and the prolog, on a DGX
// H100 fixture root with mock GPUs.

// fakeSlurm is the node as slurmctld sees it, in place of scontrol
// (slurmCtl): drains and resumes change it; failDrains makes the next
// drains fail as an scontrol that timed out does.
type fakeSlurm struct {
	mu            sync.Mutex
	state, reason string
	failDrains    int
	drains        []string // reasons of the drains that worked
	resumes       int
}

func (s *fakeSlurm) install(t *testing.T) {
	old := slurmCtl
	t.Cleanup(func() { slurmCtl = old })
	slurmCtl.show = func(_ context.Context, node string) (slurm.NodeState, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slurm.NodeState{Name: node, State: s.state, Reason: s.reason}, nil
	}
	slurmCtl.drain = func(_ context.Context, _, reason string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.failDrains > 0 {
			s.failDrains--
			return &slurm.ScontrolError{Err: errors.New("signal: killed"), Output: "slurm_update error: Socket timed out on send/recv operation"}
		}
		s.state, s.reason = "IDLE+DRAIN", reason
		s.drains = append(s.drains, reason)
		return nil
	}
	slurmCtl.resume = func(context.Context, string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.state, s.reason = "IDLE", ""
		s.resumes++
		return nil
	}
}

// adminResume is `scontrol update nodename=... state=resume` by an admin.
func (s *fakeSlurm) adminResume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.reason = "IDLE", ""
}

func (s *fakeSlurm) node() (state, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.reason
}

// standingNode is the fixture root, its spool, config (a log file and a
// textfile directory), the simulated Slurm node, and the kernel log's
// next sequence number.
type standingNode struct {
	t                            *testing.T
	root, cfg, spool, log, proms string
	slurm                        *fakeSlurm
	seq                          int
	job                          int
}

func newStandingNode(t *testing.T) *standingNode {
	t.Helper()
	root, cfg, spool := hooktest.HealthRoot(t, "")
	dir := t.TempDir()
	n := &standingNode{t: t, root: root, cfg: cfg, spool: spool, log: filepath.Join(dir, "gpuprep.log"), proms: filepath.Join(dir, "textfile"),
		slurm: &fakeSlurm{state: "IDLE"}, seq: 1}
	if err := os.Mkdir(n.proms, 0o755); err != nil {
		t.Fatal(err)
	}
	n.setConfig("")
	n.slurm.install(t)
	return n
}

// setConfig writes the config with extra TOML after [general].
func (n *standingNode) setConfig(extra string) {
	n.t.Helper()
	s := fmt.Sprintf("[general]\nlog_file = %q\nmetrics_dir = %q\n%s", n.log, n.proms, extra)
	if err := os.WriteFile(n.cfg, []byte(s), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// kernel appends driver (kernel facility, level 4) records to the kernel
// log, numbered on.
func (n *standingNode) kernel(msgs ...string) {
	n.t.Helper()
	f, err := os.OpenFile(filepath.Join(n.root, "dev/kmsg"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		n.t.Fatal(err)
	}
	defer f.Close()
	for _, m := range msgs {
		fmt.Fprintf(f, "4,%d,%d,-;%s\n", n.seq, n.seq*1000, m)
		n.seq++
	}
}

// xidLine is the driver's Xid line for the GPU at bus (as "18:00").
func xidLine(bus string, code int, text string) string {
	return fmt.Sprintf("NVRM: Xid (PCI:0000:%s): %d, pid=4242, name=python, %s", bus, code, text)
}

// healthOut is what a test reads of gpuprep-health --json.
type healthOut struct {
	code     int
	stderr   string
	Decision struct {
		Action string `json:"action"`
		Reason string `json:"drain_reason"`
		Why    string `json:"why"`
	} `json:"decision"`
	Done   bool `json:"done"`
	Health struct {
		Results []struct{ Check, Scope, Status, Severity, Reason, Value string }
		History map[string][]struct {
			Code  int    `json:"code"`
			Count int    `json:"count"`
			Text  string `json:"text"`
		} `json:"xid_history"`
	} `json:"health"`
}

// fatal is the run's fatal results, "check: reason".
func (h healthOut) fatal() []string {
	var out []string
	for _, r := range h.Health.Results {
		if r.Status == "fail" && r.Severity == "fatal" {
			out = append(out, r.Check+": "+r.Reason)
		}
	}
	return out
}

// health runs gpuprep-health as slurmd does (plus --json) with env, and
// extra flags.
func (n *standingNode) health(env map[string]string, extra ...string) healthOut {
	n.t.Helper()
	code, out, stderr := n.healthRaw(env, append([]string{"--json"}, extra...)...)
	h := healthOut{code: code, stderr: stderr}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		n.t.Fatalf("gpuprep-health: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	return h
}

func (n *standingNode) healthRaw(env map[string]string, extra ...string) (int, string, string) {
	var out, errb bytes.Buffer
	args := append([]string{"--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool, "--node", "gpu01"}, extra...)
	code := Main(cli.Env{Args: args, Getenv: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// prolog runs the prolog of a new job on gpus ("0", "1,2") and the epilog
// after it when the prolog passed, so the node is idle again; it returns
// the prolog's exit code and stderr.
func (n *standingNode) prolog(gpus string) (int, string) {
	n.t.Helper()
	n.job++
	env := map[string]string{"SLURM_JOB_ID": strconv.Itoa(500 + n.job), "SLURM_JOB_USER": "mallory", "SLURM_JOB_GPUS": gpus, "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	args := []string{"--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool}
	code, _, stderr := mainRun("prolog", env, args...)
	if code == 0 {
		env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
		if c, _, e := mainRun("epilog", env, args...); c != 0 {
			n.t.Fatalf("epilog of job %d: exit %d %s", 500+n.job, c, e)
		}
	}
	return code, stderr
}

func (n *standingNode) prom(name string) string {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.proms, name))
	if err != nil {
		n.t.Fatal(err)
	}
	return string(b)
}

func (n *standingNode) logText() string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

// codes is a GPU's history as "code×count" in its order.
func (h healthOut) codes(bus string) []string {
	var out []string
	for _, r := range h.Health.History[bus] {
		out = append(out, fmt.Sprintf("%d×%d", r.Code, r.Count))
	}
	return out
}

const bus0 = "0000:18:00.0"

// Item 2: Xid 31 (an MMU fault, which any user's out-of-bounds kernel
// makes) 40 times after a fatal Xid 74 does not flush the 74 out: the
// node stays drained, gpuprep-health keeps failing (also with --no-drain,
// for NHC), and the history holds one record per code with its count.
func TestXIDFloodKeepsFatalXID(t *testing.T) {
	n := newStandingNode(t)
	n.kernel(xidLine("18:00", 74, "NVLink: fatal error detected on link 3"))
	if h := n.health(nil); h.code != 1 || !h.Done || !strings.HasPrefix(h.Decision.Reason, "gpuprep: XID74 investigate: GPU 0 (0000:18:00.0): Xid 74") {
		t.Fatalf("Xid 74: exit %d %+v %s", h.code, h.Decision, h.stderr)
	}
	for i := 0; i < 40; i++ {
		n.kernel(xidLine("18:00", 31, fmt.Sprintf("Ch 0000000%d, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12345000", i%10)))
	}
	h := n.health(nil)
	if st, reason := n.slurm.node(); h.code != 1 || n.slurm.resumes != 0 || st != "IDLE+DRAIN" || !strings.Contains(reason, "Xid 74") {
		t.Errorf("after 40 Xid 31s: exit %d, node %s %q, %d resumes, fatal %q", h.code, st, reason, n.slurm.resumes, h.fatal())
	}
	if got := h.codes(bus0); strings.Join(got, " ") != "31×40 74×1" {
		t.Errorf("history of %s: %v, want one record per code: 31×40 74×1", bus0, got)
	}
	if code, out, _ := n.healthRaw(nil, "--no-drain"); code != 1 || !strings.Contains(out, "Xid 74") {
		t.Errorf("--no-drain (NHC) after the flood: exit %d\n%s", code, out)
	}
	if code, stderr := n.prolog("0"); code != 1 || !strings.HasPrefix(stderr, "gpuprep-prolog: health: XID74 investigate: GPU 0 (0000:18:00.0): ") || !strings.Contains(firstLine(stderr), "Xid 74") {
		t.Errorf("prolog on GPU 0 after the flood: exit %d %q", code, stderr)
	}
}

// Item 3: the one drain after a fatal Xid fails (scontrol timed out): the
// next run drains, and says in the log that it retries; an admin who
// resumes the node without clearing sees it drained again at the next
// run; a job's prolog on that GPU fails, one on another GPU runs; the
// admin's --clear (who, why) ends it, the next run resumes the node gpuprep
// drained, and the clear is in the log, the state file and the metrics.
func TestStandingXIDDrainsUntilCleared(t *testing.T) {
	n := newStandingNode(t)
	n.slurm.failDrains = 1
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	h := n.health(nil)
	if st, _ := n.slurm.node(); h.code != 1 || h.Done || st != "IDLE" {
		t.Fatalf("first run (its drain fails): exit %d done %v node %s", h.code, h.Done, st)
	}
	if log := n.logText(); !strings.Contains(log, "scontrol could not drain the node") || !strings.Contains(log, "the next run retries") {
		t.Errorf("the log does not say the drain is retried:\n%s", log)
	}
	const want = "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79"
	h = n.health(nil)
	if st, reason := n.slurm.node(); h.code != 1 || !h.Done || st != "IDLE+DRAIN" || !strings.HasPrefix(reason, want) {
		t.Fatalf("second run: exit %d done %v node %s %q; fatal %q", h.code, h.Done, st, reason, h.fatal())
	}
	n.slurm.adminResume()
	if h = n.health(nil); !h.Done || h.Decision.Action != "drain" || !strings.HasPrefix(h.Decision.Reason, want) {
		t.Fatalf("after an admin's resume: exit %d %+v", h.code, h.Decision)
	}
	if code, stderr := n.prolog("0"); code != 1 || !strings.HasPrefix(stderr, "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79") {
		t.Errorf("prolog of a job on GPU 0: exit %d %q", code, stderr)
	}
	if code, stderr := n.prolog("1"); code != 0 {
		t.Errorf("prolog of a job on GPU 1: exit %d %q", code, stderr)
	}

	// --clear needs a reason.
	code, out, stderr := n.healthRaw(nil, "--clear", "0")
	if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--reason") {
		t.Errorf("--clear without --reason: exit %d %q %q", code, out, stderr)
	}
	code, out, stderr = n.healthRaw(map[string]string{"SUDO_USER": "alice"}, "--clear", "0", "--reason", "reseated GPU 0, ticket 4711")
	if code != 0 || !strings.Contains(out, "0000:18:00.0") || !strings.Contains(out, "Xid 79") {
		t.Fatalf("--clear 0: exit %d\n%s\n%s", code, out, stderr)
	}
	h = n.health(nil)
	if st, _ := n.slurm.node(); h.code != 0 || st != "IDLE" || n.slurm.resumes != 1 {
		t.Errorf("after --clear: exit %d, node %s, %d resumes; fatal %q", h.code, st, n.slurm.resumes, h.fatal())
	}
	if code, stderr := n.prolog("0"); code != 0 {
		t.Errorf("prolog on GPU 0 after --clear: exit %d %q", code, stderr)
	}
	if log := n.logText(); !strings.Contains(log, "by=alice") || !strings.Contains(log, `reason="reseated GPU 0, ticket 4711"`) || !strings.Contains(log, "0000:18:00.0") {
		t.Errorf("the log does not record who cleared what and why:\n%s", log)
	}
	st, err := os.ReadFile(filepath.Join(n.spool, "health.json"))
	if err != nil || !strings.Contains(string(st), `"by": "alice"`) || !strings.Contains(string(st), "reseated GPU 0, ticket 4711") {
		t.Errorf("health.json does not record the clear (%v):\n%s", err, st)
	}
	if prom := n.prom("gpuprep-health.prom"); !strings.Contains(prom, `gpuprep_xid_clears_total{hook="health",source="admin",Hostname=`) ||
		!strings.Contains(prom, `pci_bus_id="00000000:18:00.0"} 1`+"\n") {
		t.Errorf("gpuprep-health.prom has no clear:\n%s", prom)
	}
}

// Item 4: with the spool's file system full, a fatal Xid still drains the
// node; the state that could not be saved is reported (stderr, the log, a
// metric) and the exit is non-zero. Once space is back the Xid still
// stands.
func TestHealthFullSpoolStillDrains(t *testing.T) {
	n := newStandingNode(t)
	mnt := fulldisk.Mount(t)
	n.spool = filepath.Join(mnt, "spool")
	if h := n.health(nil); h.code != 0 {
		t.Fatalf("healthy: exit %d %q", h.code, h.fatal())
	}
	filler := fulldisk.Fill(t, mnt)
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	code, _, stderr := n.healthRaw(nil)
	if st, reason := n.slurm.node(); code == 0 || st != "IDLE+DRAIN" || !strings.HasPrefix(reason, "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79") {
		t.Fatalf("full spool: exit %d, node %s %q\n%s", code, st, reason, stderr)
	}
	if !strings.Contains(stderr, "health.json") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr does not report the state it could not save: %q", stderr)
	}
	if log := n.logText(); !strings.Contains(log, "no space left on device") {
		t.Errorf("the log does not report it:\n%s", log)
	}
	if prom := n.prom("gpuprep-health.prom"); !strings.Contains(prom, `gpuprep_health_state_saved{hook="health",Hostname=`) || promSample(prom, "gpuprep_health_state_saved{") != "0" {
		t.Errorf("gpuprep-health.prom does not say the state was not saved:\n%s", prom)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	n.slurm.adminResume()
	if h := n.health(nil); h.code != 1 || h.Decision.Action != "drain" || promSample(n.prom("gpuprep-health.prom"), "gpuprep_health_state_saved{") != "1" {
		t.Errorf("space back: exit %d %+v", h.code, h.Decision)
	}
}

// Item 5: driver lines about resets clear nothing ("GPU reset failed",
// "reset required", "not recovered", and even a line that reads like a
// completed reset): only the driver's state does.
func TestResetLinesDoNotClear(t *testing.T) {
	n := newStandingNode(t)
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	if h := n.health(nil); h.code != 1 {
		t.Fatalf("Xid 79: exit %d", h.code)
	}
	n.kernel("NVRM: GPU 0000:18:00.0: GPU reset failed",
		"NVRM: GPU 0000:18:00.0: GPU reset required",
		"NVRM: GPU at PCI:0000:18:00: GPU not recovered",
		"NVRM: GPU 0000:18:00.0: GPU recovered after reset",
		"NVRM: GPU 0000:18:00.0: GPU reset completed")
	h := n.health(nil)
	if st, _ := n.slurm.node(); h.code != 1 || st != "IDLE+DRAIN" || n.slurm.resumes != 0 || len(h.Health.History[bus0]) != 1 {
		t.Errorf("after reset lines: exit %d, node %s, %d resumes, history %v", h.code, st, n.slurm.resumes, h.codes(bus0))
	}
}

// Item 5: the driver's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)
// other than none fails its GPU, named; back to none after it was not
// none, the GPU's Xid history clears; none all along clears nothing; a
// driver without the field is a skip.
func TestRecoveryAction(t *testing.T) {
	n := newStandingNode(t)
	hooktest.InjectFault(t, n.root, 1, gpumock.Faults{RecoveryAction: 1}) // GPU 1, 0000:2a:00.0: GPU reset
	h := n.health(nil)
	if h.code != 1 || !strings.HasPrefix(h.Decision.Reason, "gpuprep: RECOVERY_GPU_RESET reset_gpu: GPU 1 (0000:2a:00.0): ") || !strings.Contains(h.Decision.Reason, "GPU reset") {
		t.Fatalf("recovery action GPU reset: exit %d %+v", h.code, h.Decision)
	}
	if code, stderr := n.prolog("1"); code != 1 || !strings.Contains(firstLine(stderr), "GPU 1 (0000:2a:00.0)") || !strings.Contains(firstLine(stderr), "GPU reset") {
		t.Errorf("prolog on GPU 1: exit %d %q", code, stderr)
	}
	if code, stderr := n.prolog("2"); code != 0 {
		t.Errorf("prolog on GPU 2: exit %d %q", code, stderr)
	}
	hooktest.InjectFault(t, n.root, 1, gpumock.Faults{})
	if h := n.health(nil); h.code != 0 || n.slurm.resumes != 1 {
		t.Fatalf("recovery action back to none: exit %d, %d resumes, fatal %q", h.code, n.slurm.resumes, h.fatal())
	}

	// Xid 79 with the driver asking for a reboot; the action back to none
	// clears the GPU's history; the node is resumed.
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	hooktest.InjectFault(t, n.root, 0, gpumock.Faults{RecoveryAction: 2})
	h = n.health(nil)
	if h.code != 1 || len(h.fatal()) != 1 || !strings.Contains(h.fatal()[0], "Xid 79") || !strings.Contains(h.fatal()[0], "reboot") {
		t.Fatalf("Xid 79, node reboot: exit %d %q", h.code, h.fatal())
	}
	hooktest.InjectFault(t, n.root, 0, gpumock.Faults{})
	h = n.health(nil)
	if st, _ := n.slurm.node(); h.code != 0 || st != "IDLE" || len(h.Health.History[bus0]) != 0 {
		t.Errorf("recovery action back to none: exit %d node %s history %v fatal %q", h.code, st, h.codes(bus0), h.fatal())
	}
	if log := n.logText(); !strings.Contains(log, "recovery action") || !strings.Contains(log, "cleared") {
		t.Errorf("the clear by the driver's recovery action is not logged:\n%s", log)
	}

	// None all along: an Xid stands.
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	n.health(nil)
	if h := n.health(nil); h.code != 1 {
		t.Errorf("recovery action none all along cleared Xid 79: exit %d", h.code)
	}

	// A driver without the field: skipped, not failed.
	hooktest.InjectFault(t, n.root, 4, gpumock.Faults{RecoveryUnsupported: true})
	if code, stderr := n.prolog("4"); code != 0 {
		t.Errorf("recovery action not supported: prolog on GPU 4: exit %d %q", code, stderr)
	}
}

// Item 5: Xid 154 (GPU_RECOVERY_ACTION_CHANGED) is judged by the action it
// changed to: to None is not fatal, to GPU Reset is.
func TestXID154ByTargetAction(t *testing.T) {
	n := newStandingNode(t)
	n.kernel(xidLine("18:00", 154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"))
	if h := n.health(nil); h.code != 0 || len(h.fatal()) != 0 {
		t.Errorf("Xid 154 to None: exit %d %q", h.code, h.fatal())
	}
	n.kernel(xidLine("2a:00", 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"))
	h := n.health(nil)
	if h.code != 1 || len(h.fatal()) != 1 || !strings.Contains(h.fatal()[0], "GPU 1 (0000:2a:00.0): Xid 154") {
		t.Errorf("Xid 154 to GPU Reset: exit %d %q", h.code, h.fatal())
	}
}

// An old health.json (a list of each GPU's last 32 Xids) still loads: its
// Xids become one record per code, and a fatal one in it stands.
func TestOldHealthStateLoads(t *testing.T) {
	n := newStandingNode(t)
	var hist []string
	hist = append(hist, `{"code":74,"bus_id":"0000:18:00.0","seq":3,"usec":3000,"text":"NVLink","severity":"fatal"}`)
	for i := 0; i < 31; i++ {
		hist = append(hist, fmt.Sprintf(`{"code":31,"bus_id":"0000:18:00.0","seq":%d,"usec":%d,"text":"MMU Fault","severity":"warn"}`, 4+i, 4000+i))
	}
	old := `{"boot_id":"11111111-2222-3333-4444-555555555555","kmsg_next_seq":1,"xid_history":{"0000:18:00.0":[` + strings.Join(hist, ",") + `]}}`
	if err := os.MkdirAll(n.spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.spool, "health.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	h := n.health(nil)
	if h.code != 1 || strings.Join(h.codes(bus0), " ") != "31×31 74×1" {
		t.Errorf("old state: exit %d history %v fatal %q", h.code, h.codes(bus0), h.fatal())
	}
}

// Item 8: gpuprep-health, the prolog and the epilog each read the kernel
// log (each moves the watermark), and the records lost before they read
// them are counted in their textfile, for an alert.
func TestKernelLogLossCounted(t *testing.T) {
	n := newStandingNode(t)
	next := func() uint64 {
		var st struct {
			Next uint64 `json:"kmsg_next_seq"`
		}
		b, _ := os.ReadFile(filepath.Join(n.spool, "health.json"))
		json.Unmarshal(b, &st)
		return st.Next
	}
	n.seq = 50 // records 1-49 lost before gpuprep-health read the log
	n.kernel("NVRM: loading NVIDIA UNIX x86_64 Kernel Module")
	if h := n.health(nil); h.code != 0 || next() != 51 {
		t.Fatalf("gpuprep-health: exit %d, watermark %d", h.code, next())
	}
	if v := promSample(n.prom("gpuprep-health.prom"), `gpuprep_kmsg_lost_records_total{hook="health"`); v != "49" {
		t.Errorf("gpuprep-health counted %q lost records, want 49:\n%s", v, n.prom("gpuprep-health.prom"))
	}
	env := map[string]string{"SLURM_JOB_ID": "900", "SLURM_JOB_USER": "mallory", "SLURM_JOB_GPUS": "0"}
	args := []string{"--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool}
	n.seq = 60 // 51-59 lost
	n.kernel("NVRM: x")
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 || next() != 61 {
		t.Fatalf("prolog: exit %d %q, watermark %d", code, stderr, next())
	}
	if v := promSample(n.prom("gpuprep-prolog.prom"), `gpuprep_kmsg_lost_records_total{hook="prolog"`); v != "9" {
		t.Errorf("the prolog counted %q lost records, want 9:\n%s", v, n.prom("gpuprep-prolog.prom"))
	}
	n.seq = 65 // 61-64 lost
	n.kernel("NVRM: y")
	if code, _, stderr := mainRun("epilog", env, args...); code != 0 || next() != 66 {
		t.Fatalf("epilog: exit %d %q, watermark %d", code, stderr, next())
	}
	if v := promSample(n.prom("gpuprep-epilog.prom"), `gpuprep_kmsg_lost_records_total{hook="epilog"`); v != "4" {
		t.Errorf("the epilog counted %q lost records, want 4:\n%s", v, n.prom("gpuprep-epilog.prom"))
	}
}

// promSample is the value of the first sample whose line starts with
// prefix, "" when none.
func promSample(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// --clear's input: --reason is required (and only with --clear), one
// line; root only; a GPU by index, UUID, bus id (listed or not) or all;
// an unknown GPU is bad input; nothing to clear is said and not recorded.
func TestClearFlags(t *testing.T) {
	n := newStandingNode(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clear", "0"}, "--clear needs --reason TEXT"},
		{[]string{"--clear", "0", "--reason", "  "}, "--clear needs --reason TEXT"},
		{[]string{"--reason", "x"}, "--reason goes with --clear"},
		{[]string{"--clear", "0", "--reason", "a\nb"}, "one line"},
		{[]string{"--clear", "0", "--reason", "x", "--dry-run"}, "--dry-run"},
		{[]string{"--clear", "9", "--reason", "x"}, `--clear "9": no such GPU (give an index 0-7, a PCI bus id, a UUID, or all)`},
		{[]string{"--clear", "GPU-nope", "--reason", "x"}, "no such GPU"},
	} {
		code, out, stderr := n.healthRaw(nil, c.args...)
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d %q %q, want exit 2 with %q", c.args, code, out, stderr, c.want)
		}
	}
	old := euid
	euid = func() int { return 1000 }
	code, _, stderr := n.healthRaw(nil, "--clear", "0", "--reason", "x")
	euid = old
	if code != 2 || !strings.Contains(stderr, "--clear needs root") {
		t.Errorf("not root: exit %d %q", code, stderr)
	}

	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."), xidLine("2a:00", 79, "GPU has fallen off the bus."),
		xidLine("3a:00", 79, "GPU has fallen off the bus."), xidLine("e1:00", 79, "GPU has fallen off the bus."))
	if h := n.health(nil); h.code != 1 || len(h.fatal()) != 4 {
		t.Fatalf("4 Xids: exit %d %q", h.code, h.fatal())
	}
	for _, c := range []struct{ arg, want string }{
		{"0", "cleared GPU 0 (0000:18:00.0): Xid 79 (by uid 0: fixed)"},
		{"GPU-915b41c0-5060-2ce9-7004-4fc3f3b05407", "cleared GPU 1 (0000:2a:00.0): Xid 79"},
		{"3a:00.0", "cleared GPU 2 (0000:3a:00.0): Xid 79"},
		{"0000:e1:00.0", "cleared GPU ? (0000:e1:00.0): Xid 79"}, // a GPU the backend does not list
		{"all", "nothing to clear: no Xid history for all"},
	} {
		code, out, stderr := n.healthRaw(nil, "--clear", c.arg, "--reason", "fixed")
		if code != 0 || !strings.HasPrefix(out, c.want) {
			t.Errorf("--clear %s: exit %d %q %q, want %q", c.arg, code, out, stderr, c.want)
		}
	}
	if h := n.health(nil); h.code != 0 {
		t.Errorf("after the clears: exit %d %q", h.code, h.fatal())
	}
	var st struct {
		Clears []struct {
			BusID string `json:"bus_id"`
			By    string `json:"by"`
		} `json:"clears"`
	}
	b, _ := os.ReadFile(filepath.Join(n.spool, "health.json"))
	if err := json.Unmarshal(b, &st); err != nil || len(st.Clears) != 4 || st.Clears[3].BusID != "0000:e1:00.0" {
		t.Errorf("clears in health.json (%v): %+v", err, st.Clears)
	}
}

// xidStatus is the xid check's status sample for the GPU at bus
// ("00000000:18:00.0") in a metrics file, "" when there is none.
func xidStatus(prom, bus string) string {
	for _, line := range strings.Split(prom, "\n") {
		if strings.HasPrefix(line, `gpuprep_health_check_status{hook=`) && strings.Contains(line, `check="xid"`) && strings.Contains(line, `pci_bus_id="`+bus+`"`) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

// A fatal Xid that stands keeps the xid check's status metric at 2 on its
// GPU in every writer's file, until it is cleared: gpuprep-health's run
// that found it, its next run (no new Xid), and the epilog of the job that
// ran on the GPU when it came (the epilog does not fail for it, but its
// status must not say ok: the dashboard and the rules read whichever
// writer ran last). After --clear, 0.
func TestStandingXIDInStatusMetric(t *testing.T) {
	n := newStandingNode(t)
	const bus = "00000000:18:00.0"
	args := []string{"--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool}
	env := map[string]string{"SLURM_JOB_ID": "700", "SLURM_JOB_USER": "mallory", "SLURM_JOB_GPUS": "0", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	n.kernel(xidLine("18:00", 79, "GPU has fallen off the bus."))
	for i := range 2 {
		if h := n.health(nil); h.code != 1 {
			t.Fatalf("health run %d: exit %d", i+1, h.code)
		}
		if v := xidStatus(n.prom("gpuprep-health.prom"), bus); v != "2" {
			t.Errorf("health run %d: xid status %q, want 2", i+1, v)
		}
	}
	env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
	if code, _, stderr := mainRun("epilog", env, args...); code != 0 {
		t.Fatalf("epilog: %d %s", code, stderr)
	}
	if v := xidStatus(n.prom("gpuprep-epilog.prom"), bus); v != "2" {
		t.Errorf("epilog: xid status %q while Xid 79 stands, want 2:\n%s", v, n.prom("gpuprep-epilog.prom"))
	}
	// A job on GPU 1: its prolog passes, and its files say GPU 0's Xid
	// stands too.
	if code, stderr := n.prolog("1"); code != 0 {
		t.Fatalf("a job on GPU 1: %d %s", code, stderr)
	}
	for _, f := range []string{"gpuprep-prolog.prom", "gpuprep-epilog.prom"} {
		if v := xidStatus(n.prom(f), bus); v != "2" {
			t.Errorf("%s of a job on GPU 1: GPU 0's xid status %q, want 2", f, v)
		}
	}
	if code, out, stderr := n.healthRaw(nil, "--clear", "0", "--reason", "GPU replaced"); code != 0 {
		t.Fatalf("--clear: %d %s %s", code, out, stderr)
	}
	n.health(nil)
	n.prolog("1")
	for _, f := range []string{"gpuprep-health.prom", "gpuprep-prolog.prom", "gpuprep-epilog.prom"} {
		prom := n.prom(f)
		if v := xidStatus(prom, bus); v != "" {
			t.Errorf("%s after --clear: GPU 0's xid status %q, want none (the node's xid: ok)", f, v)
		}
		if !strings.Contains(prom, `check="xid",Hostname=`) || promSample(prom, `gpuprep_health_check_status{hook="`) == "" {
			t.Errorf("%s after --clear: no xid status:\n%s", f, prom)
		}
	}
}
