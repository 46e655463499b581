package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthXIDStandsInSlurm: on the dgxh100 fixture, the kernel log
// holds an Xid 79 (GPU fallen off the bus) of GPU 0. The first job's
// prolog fails, and the node drains with gpuprep's reason (in slurmd.log
// and as the drain reason); nothing on the node changed. The Xid stands
// against GPU 0 until it is cleared (issue 30): an admin who only resumes
// the node sees the next job on GPU 0 fail and the node drain again; once
// the admin clears GPU 0 (gpuprep-health --clear) and resumes, the next
// job runs and the node stays up.
func TestHealthXIDStandsInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	n.withXID79()
	base := n.snap()
	c := startHookCluster(t, n, "")
	const reason = "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79"
	mustDrain(t, c, reason+" (pid=4242, name=python, GPU has fallen off the bus.)")
	if d := n.snap().Diff(base, 5); len(d) != 0 {
		t.Errorf("the failed health check changed the node: %v", d)
	}
	// Resumed without clearing: the Xid still stands against GPU 0.
	c.Resume()
	mustDrain(t, c, reason+" not cleared")
	// The admin clears GPU 0, then resumes: the next job runs.
	clear := exec.Command(bin(t, "gpuprep-health"), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool,
		"--clear", "0", "--reason", "GPU 0 reseated")
	if out, err := clear.CombinedOutput(); err != nil {
		t.Fatalf("gpuprep-health --clear 0: %v\n%s", err, out)
	}
	c.Resume()
	if out, stderr, err := c.Srun("--gres=gpu:1", "-n1", "echo", "ran"); err != nil || !strings.Contains(out, "ran") {
		t.Fatalf("job after the clear and resume: %v\n%s\n%s", err, stderr, c.LogTails(30))
	}
	if st, r := c.NodeState(); strings.HasPrefix(st, "drain") {
		t.Errorf("drained again after the clear: %q %q", st, r)
	}
}

// withXID79 gives the node a boot id and a kernel log (/dev/kmsg as a file)
// that holds the driver's Xid 79 (GPU fallen off the bus) of GPU 0.
func (n *hookNode) withXID79() {
	n.t.Helper()
	for p, s := range map[string]string{
		"proc/sys/kernel/random/boot_id": "11111111-2222-3333-4444-555555555555\n",
		"dev/kmsg": "6,0,0,-;Linux version 6.1.0\n" +
			"4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n",
	} {
		full := filepath.Join(n.root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			n.t.Fatal(err)
		}
	}
}
