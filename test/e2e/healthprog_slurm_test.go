package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/test/slurmharness"
)

// healthProgNode is a real one-node Slurm whose HealthCheckProgram is
// gpuprep-health on n's fixture root (mock:dgxh100), run by slurmd every 2
// s; runs counts its runs, metrics is its textfile directory.
type healthProgNode struct {
	*hookNode
	c             *slurmharness.Cluster
	runs, metrics string
	env           string
}

func startHealthProgNode(t *testing.T, n *hookNode) *healthProgNode {
	t.Helper()
	h := &healthProgNode{hookNode: n, runs: filepath.Join(t.TempDir(), "runs"), metrics: t.TempDir(), env: filepath.Join(t.TempDir(), "env")}
	cfg := strings.Replace(hookConfig, `metrics_dir = ""`, `metrics_dir = "`+h.metrics+`"`, 1)
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	devDir := t.TempDir()
	slurmharness.MakeDevices(t, devDir, []int{0, 1, 2, 3, 4, 5, 6, 7})
	// slurmd runs HealthCheckProgram with an environment of its own
	// (SLURMD_NODENAME); the wrapper records it, counts the runs, and
	// points scontrol at this cluster's slurm.conf beside it.
	script := "#!/bin/sh\nenv > " + h.env + "\necho run >> " + h.runs + "\n" +
		`SLURM_CONF="$(dirname "$0")/slurm.conf" exec ` + bin(t, "gpuprep-health") +
		" --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + "\n"
	h.c = slurmharness.Start(t, slurmharness.Options{
		Gres: "gpu:8", GresConf: strings.ReplaceAll(pciGresConf(t, n.root), "/dev/", devDir+"/"),
		Files:              map[string]string{"health.sh": script},
		HealthCheckProgram: "health.sh",
		// The first run, at slurmd's start, may drain the node before it
		// registers.
		ReadyStates: []string{"idle", "drained", "draining"},
	})
	return h
}

// runCount is how many times slurmd ran the program so far.
func (h *healthProgNode) runCount() int {
	b, _ := os.ReadFile(h.runs)
	return strings.Count(string(b), "run\n")
}

// waitRuns waits for n more complete runs of the program (a run is complete
// when the next has started), up to 60 s.
func (h *healthProgNode) waitRuns(n int) {
	h.t.Helper()
	want := h.runCount() + n + 1
	for end := time.Now().Add(60 * time.Second); h.runCount() < want; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			h.t.Fatalf("slurmd ran gpuprep-health %d times, want %d:\n%s", h.runCount(), want, h.c.LogTails(30))
		}
	}
}

// waitState waits up to 60 s for the node to be in a state with prefix
// and a reason with want, and returns what it saw last.
func (h *healthProgNode) waitState(prefix, want string) (string, string) {
	h.t.Helper()
	var st, reason string
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		st, reason = h.c.NodeState()
		if strings.HasPrefix(st, prefix) && strings.Contains(reason, want) {
			return st, reason
		}
	}
	h.t.Fatalf("node %q reason %q, want %s* with %q:\n%s", st, reason, prefix, want, h.c.LogTails(30))
	return st, reason
}

func (h *healthProgNode) appendKmsg(line string) {
	h.t.Helper()
	f, err := os.OpenFile(filepath.Join(h.root, "dev/kmsg"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		h.t.Fatal(err)
	}
}

// TestHealthCheckProgramInSlurm: gpuprep-health as slurmd's
// HealthCheckProgram on an idle node. An Xid 79 of GPU 0 drains the node
// with a reason that starts "gpuprep: " and names the check and the GPU;
// runs with no new Xid keep it drained (no new Xid is no evidence), and so
// does the driver's line that the GPU recovered (a log line clears
// nothing); an admin's gpuprep-health --clear resumes it at the next run;
// an admin's drain is left alone by every later run. Its textfile says
// drained, then not.
func TestHealthCheckProgramInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	n.withXID79()
	base := n.snap()
	h := startHealthProgNode(t, n)

	const want = "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79"
	h.waitState("drain", want)
	if env, _ := os.ReadFile(h.env); !strings.Contains(string(env), "SLURMD_NODENAME="+h.c.Node+"\n") {
		t.Errorf("slurmd's environment for HealthCheckProgram lacks SLURMD_NODENAME=%s:\n%s", h.c.Node, env)
	}
	h.waitRuns(2)
	if st, reason := h.c.NodeState(); !strings.HasPrefix(st, "drain") || !strings.Contains(reason, want) {
		t.Fatalf("resumed with no evidence that the GPU was reset: %q %q", st, reason)
	}
	prom := h.prom()
	if v := promValue(prom, `gpuprep_node_drained{hook="health",Hostname=`); v != "1" {
		t.Errorf("gpuprep_node_drained = %q while drained:\n%s", v, prom)
	}
	if v := promValue(prom, `gpuprep_xid_events_total{hook="health",code="79",severity="fatal",Hostname=`); v != "1" {
		t.Errorf("Xid 79 counted %q times, want once:\n%s", v, prom)
	}

	// A line saying the GPU recovered changes nothing; the admin's clear
	// does: the next run resumes the node.
	h.appendKmsg("4,2,9000000,-;NVRM: GPU 0000:18:00.0: GPU recovered after reset")
	h.waitRuns(2)
	if st, reason := h.c.NodeState(); !strings.HasPrefix(st, "drain") || !strings.Contains(reason, want) {
		t.Fatalf("a log line resumed the node: %q %q", st, reason)
	}
	clear := exec.Command(bin(t, "gpuprep-health"), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool,
		"--clear", "0", "--reason", "GPU 0 reset by hand")
	if out, err := clear.CombinedOutput(); err != nil || !strings.Contains(string(out), "cleared GPU 0 (0000:18:00.0): Xid 79") {
		t.Fatalf("gpuprep-health --clear 0: %v\n%s", err, out)
	}
	h.waitState("idle", "")
	h.waitRuns(1)
	if prom := h.prom(); promValue(prom, `gpuprep_node_drained{hook="health",Hostname=`) != "0" {
		t.Errorf("gpuprep_node_drained after the resume:\n%s", prom)
	}

	// An admin's drain is never gpuprep's to lift.
	if _, _, err := h.c.Run(t.Context(), "scontrol", "update", "nodename="+h.c.Node, "state=drain", "reason=admin: fan 3 noisy"); err != nil {
		t.Fatal(err)
	}
	h.waitRuns(2)
	if st, reason := h.c.NodeState(); !strings.HasPrefix(st, "drain") || reason != "admin: fan 3 noisy" {
		t.Errorf("the admin's drain changed: %q %q", st, reason)
	}
	if d := n.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("gpuprep-health changed the node: %v", d)
	}
}

// prom is gpuprep-health.prom.
func (h *healthProgNode) prom() string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.metrics, "gpuprep-health.prom"))
	if err != nil {
		h.t.Fatalf("%v:\n%s", err, h.c.LogTails(20))
	}
	return string(b)
}

// promValue is the value of the first sample line of text that starts with
// prefix, "" when none.
func promValue(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}
