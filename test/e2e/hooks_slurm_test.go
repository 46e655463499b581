package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/knobsnap"
	"gpuprep/test/slurmharness"
)

// TestHooksInSlurm: Prolog= and Epilog= point at gpuprep's binaries on a
// simulated DGX H100 root. A job's profile is in force while it runs (the
// job reads the files itself); afterwards the node is back at its baseline;
// a job that changes a knob mid-run leaves a drift record; a required knob
// of a user's profile that cannot be applied falls back to the default
// profile, unless the admin sets selection.unfit_profile = "fail": then it
// drains the node with gpuprep's reason in slurmd.log, and resuming the
// node works.
func TestHooksInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	// drain_reason: the prolog also sets the node's drain reason itself.
	strict := strings.Replace(hookConfig, `deadline = "60s"`, "deadline = \"60s\"\ndrain_reason = true", 1) + `
[profiles.strict]
inherits = "default"
cpu_governor = "userspace" # intel_pstate offers only performance and powersave
required = ["cpu_governor"]
`
	if err := os.WriteFile(n.cfg, []byte(strict), 0o644); err != nil {
		t.Fatal(err)
	}
	// A warm cycle so the mock GPUs' saved settings exist in the baseline.
	n.must("prolog", 1, "0", "")
	n.must("epilog", 1, "", "")
	base := n.snap()

	gres, _, code := runBin(t, "gpuprep-gres", "--root", n.root, "--gpu-backend", "mock:dgxh100")
	nodeLine, _, code2 := runBin(t, "gpuprep-gres", "--root", n.root, "--gpu-backend", "mock:dgxh100", "--format", "slurm")
	if code != 0 || code2 != 0 {
		t.Fatal("gpuprep-gres failed")
	}
	devDir := t.TempDir()
	var minors []int
	for _, m := range regexp.MustCompile(`/dev/nvidia(\d+)\b`).FindAllStringSubmatch(gres, -1) {
		v, _ := strconv.Atoi(m[1])
		minors = append(minors, v)
	}
	slurmharness.MakeDevices(t, devDir, minors)
	args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	// killEpilog: while this file exists, the next epilog is killed
	// (SIGKILL) at its 3rd rename, after its journal and part of its
	// restore: what a node crash or an OOM kill does to a real epilog.
	killEpilog := filepath.Join(t.TempDir(), "kill-next-epilog")
	strace := straceBin(t)
	rn := "rename,renameat,renameat2"
	c := slurmharness.Start(t, slurmharness.Options{
		NodeLine: firstNonComment(nodeLine),
		GresConf: strings.ReplaceAll(gres, "/dev/", devDir+"/"),
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nif [ -e " + killEpilog + " ]; then rm -f " + killEpilog + "; exec " + strace + " -f -qq -o /dev/null -e trace=" + rn +
				" -e inject=" + rn + ":signal=KILL:when=3 " + bin(t, "gpuprep-epilog") + args + "; fi\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	gov := filepath.Join(n.root, "sys/devices/system/cpu/cpu57/cpufreq/scaling_governor")
	swappiness := filepath.Join(n.root, "proc/sys/vm/swappiness")

	// 1. The profile is applied when the job starts.
	// (Files written by gpuprep on a fixture root have no trailing newline.)
	out := c.MustSrun("--gres=gpu:2", "sh", "-c", `echo "$(cat `+gov+`) $(cat `+swappiness+`)"`)
	if got := strings.Fields(out); len(got) != 2 || got[0] != "performance" || got[1] != "10" {
		t.Fatalf("inside the job: governor, swappiness = %q", out)
	}
	// 2. After the job the node is back at baseline (the epilog runs after
	// the job's end; wait for it).
	waitBaseline(t, n, base, "after a plain job")

	// 3. A job that changes a knob mid-run produces a drift record.
	c.MustSrun("--gres=gpu:1", "sh", "-c", "echo 33 > "+swappiness)
	waitBaseline(t, n, base, "after a drifting job")
	drift, _ := os.ReadFile(filepath.Join(n.spool, "drift.jsonl"))
	if !strings.Contains(string(drift), `"knob":"vm_swappiness"`) || !strings.Contains(string(drift), `"found":"33"`) {
		t.Errorf("no drift record for vm_swappiness:\n%s", drift)
	}
	report, _, _ := runBin(t, "gpuprep-epilog", "--state-dir", n.spool, "--config", n.cfg, "--report")
	if !strings.Contains(report, "vm_swappiness") {
		t.Errorf("--report does not show the drift:\n%s", report)
	}

	// 4. A user's profile whose required knob cannot be applied never
	// drains the node: the job runs with the default profile.
	c.MustSrun("--comment=gpuprep=strict", "-n1", "true")
	if st, reason := c.NodeState(); strings.HasPrefix(st, "drain") {
		t.Fatalf("a user's unfit profile drained the node: %q (%q)", st, reason)
	}
	waitBaseline(t, n, base, "after the fallback")
	// Only the admin can make it drain (selection.unfit_profile = "fail"):
	// then the reason is in slurmd.log, and resuming the node works.
	if err := os.WriteFile(n.cfg, []byte(strict+"\n[selection]\nunfit_profile = \"fail\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := c.Srun("--comment=gpuprep=strict", "-n1", "true"); err == nil {
		t.Fatalf("job ran although a required knob failed: %s", stderr)
	}
	st, reason := c.NodeState()
	if !strings.HasPrefix(st, "drain") {
		t.Errorf("node state %q (reason %q), want drained", st, reason)
	}
	if !strings.Contains(reason, "gpuprep-prolog: required knob cpu_governor") {
		t.Errorf("drain reason %q, want gpuprep's (drain_reason = true)", reason)
	}
	if log := c.SlurmdLog(); !strings.Contains(log, "gpuprep-prolog: required knob cpu_governor") {
		t.Errorf("slurmd.log lacks gpuprep's reason:\n%s", c.LogTails(30))
	}
	c.Resume()
	if st, _, ok := c.WaitNodeState(20*time.Second, "idle"); !ok {
		t.Fatalf("node %q after resume", st)
	}
	c.MustSrun("-n1", "true")
	waitBaseline(t, n, base, "after resume")

	// 5. An epilog killed half-way: Slurm drains the node ("Epilog error")
	// and never re-runs it. After the resume, the next job's prolog
	// finishes the killed release, and that job's epilog leaves the node at
	// its baseline with a clean spool.
	if err := os.WriteFile(killEpilog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.MustSrun("--gres=gpu:1", "sh", "-c", "echo 44 > "+swappiness)
	if st, reason, ok := c.WaitNodeState(20*time.Second, "drain", "drained", "draining"); !ok {
		t.Fatalf("node %q (%q) after a killed epilog, want drained", st, reason)
	}
	if _, err := os.Lstat(filepath.Join(n.spool, "journal.json")); err != nil {
		t.Fatalf("the killed epilog left no journal (was it killed?): %v\n%s", err, c.LogTails(20))
	}
	c.Resume()
	if st, _, ok := c.WaitNodeState(20*time.Second, "idle"); !ok {
		t.Fatalf("node %q after resume", st)
	}
	c.MustSrun("-n1", "true")
	waitBaseline(t, n, base, "after the job following a killed epilog")
	if jobs, _ := filepath.Glob(filepath.Join(n.spool, "job-*.json")); len(jobs) != 0 {
		t.Errorf("job records left after a killed epilog and the next job: %v", jobs)
	}
	drift, _ = os.ReadFile(filepath.Join(n.spool, "drift.jsonl"))
	if strings.Count(string(drift), `"found":"44"`) != 1 {
		t.Errorf("the killed epilog's drift is not recorded exactly once:\n%s", drift)
	}
}

// straceBin is strace's path (slurmd gives hooks no PATH). Under CI it must
// be installed (make deps installs it).
func straceBin(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/strace", "/bin/strace"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("strace is not installed (make deps installs it)")
	}
	t.Skip("strace is not installed")
	return ""
}

// waitBaseline waits for the epilog to put the node back at base.
func waitBaseline(t *testing.T, n *hookNode, base knobsnap.Snapshot, what string) {
	t.Helper()
	var d []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if d = n.snap().Diff(base, 5); len(d) == 0 {
			if _, err := os.Lstat(filepath.Join(n.spool, "journal.json")); err != nil {
				return
			}
		}
	}
	t.Fatalf("%s: node not back at baseline: %v", what, d)
}
