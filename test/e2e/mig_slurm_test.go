package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	c := startHookCluster(t, n, "[mig.layout]\n\"0\" = [\"7g.80gb\"]\n")
	mustDrain(t, c, "gpuprep-prolog: MIG mismatch on GPU 0 (0000:18:00.0): want 7g.80gb, found MIG disabled")
	if d := n.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("the failed MIG check changed the node: %v", d)
	}
}

// TestMIGReconfigureInSlurm: with [mig] reconfigure, a job given GPU 0
// (MIG disabled, 7g.80gb wanted) runs: its prolog made the layout, which
// the simulated GPU keeps. Then with MIG disabled wanted and a process on
// the GPU, the prolog refuses to change it: the job fails and the node
// drains with the reason.
func TestMIGReconfigureInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	n.must("prolog", 1, "0", "")
	n.must("epilog", 1, "", "")
	c := startHookCluster(t, n, "[mig]\nreconfigure = true\n[mig.layout]\n\"0\" = [\"7g.80gb\"]\n")
	c.MustSrun("--gres=gpu:1", "-n1", "true")
	saved, _ := filepath.Glob(filepath.Join(n.root, "run/gpuprep-mock/*.mig.json"))
	var uuid string
	for _, f := range saved {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), `"mode":1`) && strings.Count(string(b), `"gi":`) == 1 {
			uuid = strings.TrimSuffix(filepath.Base(f), ".mig.json")
		}
	}
	if uuid == "" {
		t.Fatalf("no simulated GPU holds one 7g.80gb MIG device after the job (%v):\n%s", saved, c.LogTails(30))
	}

	cfg, _ := os.ReadFile(n.cfg)
	os.WriteFile(n.cfg, []byte(strings.Replace(string(cfg), `"0" = ["7g.80gb"]`, `"0" = []`, 1)), 0o644)
	os.WriteFile(filepath.Join(n.root, "run/gpuprep-mock", uuid+".faults.json"), []byte(`{"processes": [4242]}`), 0o644)
	mustDrain(t, c, "MIG mismatch on GPU 0 (0000:18:00.0): want MIG disabled, found MIG enabled (7g.80gb); not reconfigured: in use by process 4242")
}
