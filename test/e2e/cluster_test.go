package e2e

import (
	"os"
	"strings"
	"testing"

	"gpuprep/test/slurmharness"
)

// startHookCluster starts a one-node Slurm whose prolog and epilog run
// gpuprep on n's fixture root (mock:dgxh100), with drain_reason on and
// extra appended to the config; gres.conf lists the GPUs in PCI order.
func startHookCluster(t *testing.T, n *hookNode, extra string) *slurmharness.Cluster {
	t.Helper()
	cfg := strings.Replace(hookConfig, `deadline = "60s"`, "deadline = \"60s\"\ndrain_reason = true", 1) + extra
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	devDir := t.TempDir()
	slurmharness.MakeDevices(t, devDir, []int{0, 1, 2, 3, 4, 5, 6, 7})
	gres := pciGresConf(t, n.root) // SLURM_JOB_GPUS=0 is GPU 0 in bus order
	args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	return slurmharness.Start(t, slurmharness.Options{
		Gres: "gpu:8", GresConf: strings.ReplaceAll(gres, "/dev/", devDir+"/"),
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
}

// mustDrain runs a one-GPU job whose prolog must fail, and checks that the
// node drained with want in its drain reason and in slurmd.log.
func mustDrain(t *testing.T, c *slurmharness.Cluster, want string) {
	t.Helper()
	if _, stderr, err := c.Srun("--gres=gpu:1", "-n1", "true"); err == nil {
		t.Fatalf("the job ran; want its prolog to fail with %q: %s", want, stderr)
	}
	st, reason := c.NodeState()
	if !strings.HasPrefix(st, "drain") || !strings.Contains(reason, want) {
		t.Errorf("node state %q reason %q, want drained with %q", st, reason, want)
	}
	if !strings.Contains(c.SlurmdLog(), want) {
		t.Errorf("slurmd.log lacks gpuprep's reason %q:\n%s", want, c.LogTails(30))
	}
}
