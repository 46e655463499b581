package e2e

import (
	"os"
	"strings"
	"testing"

	"gpuprep/test/slurmharness"
)

// TestMIGMismatchDrainsInSlurm: on the dgxh100 fixture (MIG disabled on
// every GPU) with [mig.layout] wanting MIG devices on GPU 0, a job given
// that GPU fails its prolog, the node drains with gpuprep's reason
// (drain_reason = true, and in slurmd.log), and nothing on the node
// changed.
func TestMIGMismatchDrainsInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	// A warm cycle so the mock GPUs' saved settings exist in the baseline.
	n.must("prolog", 1, "0", "")
	n.must("epilog", 1, "", "")
	base := n.snap()
	cfg := strings.Replace(hookConfig, `deadline = "60s"`, "deadline = \"60s\"\ndrain_reason = true", 1) +
		"[mig.layout]\n\"0\" = [\"7g.80gb\"]\n"
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	devDir := t.TempDir()
	minors := []int{0, 1, 2, 3, 4, 5, 6, 7}
	slurmharness.MakeDevices(t, devDir, minors)
	gres := pciGresConf(t, n.root) // SLURM_JOB_GPUS=0 is GPU 0 in bus order
	args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	c := slurmharness.Start(t, slurmharness.Options{
		Gres: "gpu:8", GresConf: strings.ReplaceAll(gres, "/dev/", devDir+"/"),
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	if _, stderr, err := c.Srun("--gres=gpu:1", "-n1", "true"); err == nil {
		t.Fatalf("job ran although its GPU's MIG layout mismatches: %s", stderr)
	}
	const want = "gpuprep-prolog: MIG mismatch on GPU 0 (0000:18:00.0): want 7g.80gb, found MIG disabled"
	st, reason := c.NodeState()
	if !strings.HasPrefix(st, "drain") || !strings.Contains(reason, want) {
		t.Errorf("node state %q reason %q, want drained with %q", st, reason, want)
	}
	if log := c.SlurmdLog(); !strings.Contains(log, want) {
		t.Errorf("slurmd.log lacks gpuprep's reason:\n%s", c.LogTails(30))
	}
	if d := n.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("the failed MIG check changed the node: %v", d)
	}
}
