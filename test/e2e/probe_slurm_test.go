package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/host"
)

// TestProbeInSlurm: gpuprep-health --probe under the real Slurm of make
// test, on the dgxh100 fixture with the mock GPUs' fake CUDA driver. The
// probe drains the idle node ("gpuprep: probing"); a job submitted while it
// runs waits, and runs once the passing probe resumed the node. A probe
// that finds a GPU's memory slow drains the node for HBM_SLOW: jobs wait;
// gpuprep-health's checks (as HealthCheckProgram runs them) leave that
// drain; after the repair a probe passes and the waiting job runs.
func TestProbeInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	c := startHookCluster(t, n, "")
	probe := func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin(t, "gpuprep-health"), "--probe", "--root", n.root, "--gpu-backend", "mock:dgxh100",
			"--config", n.cfg, "--state-dir", n.spool, "--node", c.Node)
		cmd.Env = c.Env()
		return cmd
	}
	// A probe that lasts: each kernel launch of GPU 0 stalls 1.5 s.
	writeCUDARates(t, n.root, map[string]gpumock.CUDARates{"0000:18:00.0": {StallMS: 1500}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	running := probe(ctx)
	var out bytes.Buffer
	running.Stdout, running.Stderr = &out, &out
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	if st, reason, ok := c.WaitNodeState(30*time.Second, "drained"); !ok || reason != "gpuprep: probing" {
		t.Fatalf("node %q %q while probing, want drained \"gpuprep: probing\"\n%s", st, reason, out.String())
	}
	job := c.Sbatch("echo ran", "--gres=gpu:1")
	time.Sleep(2 * time.Second)
	if m, err := c.Job(job); err != nil || m["JobState"] != "PENDING" {
		t.Errorf("job submitted during the probe: %v %v, want PENDING", m["JobState"], err)
	}
	if err := running.Wait(); err != nil {
		t.Fatalf("probe: %v\n%s", err, out.String())
	}
	if st := c.WaitJob(job, 60*time.Second); st != "COMPLETED" {
		t.Fatalf("the waiting job after a passing probe: %s\n%s", st, c.LogTails(30))
	}

	// GPU 3's memory copies at a third of its healthy rate.
	writeCUDARates(t, n.root, map[string]gpumock.CUDARates{"0000:5d:00.0": {CopyGBps: 500}})
	if b, err := probe(ctx).CombinedOutput(); err == nil || !strings.Contains(string(b), "HBM_SLOW") {
		t.Fatalf("probe of a slow GPU: %v, want exit 1 naming HBM_SLOW\n%s", err, b)
	}
	const want = "gpuprep: HBM_SLOW investigate: GPU 3 (0000:5d:00.0): device memory 1000.0 GB/s"
	if st, reason := c.NodeState(); st != "drained" || !strings.HasPrefix(reason, want) {
		t.Fatalf("node %q %q, want drained with %q", st, reason, want)
	}
	waiting := c.Sbatch("echo ran", "--gres=gpu:1")
	check := exec.Command(bin(t, "gpuprep-health"), "--root", n.root, "--gpu-backend", "mock:dgxh100",
		"--config", n.cfg, "--state-dir", n.spool, "--node", c.Node)
	check.Env = c.Env()
	if b, err := check.CombinedOutput(); err == nil {
		t.Errorf("gpuprep-health with a failed verdict: exit 0, want 1\n%s", b)
	}
	if st, _ := c.NodeState(); st != "drained" {
		t.Errorf("gpuprep-health lifted the probe's drain: %q", st)
	}
	writeCUDARates(t, n.root, nil)
	if b, err := probe(ctx).CombinedOutput(); err != nil {
		t.Fatalf("probe after the repair: %v\n%s", err, b)
	}
	if st := c.WaitJob(waiting, 60*time.Second); st != "COMPLETED" {
		t.Fatalf("the job that waited for the repair: %s\n%s", st, c.LogTails(30))
	}
}

// writeCUDARates sets what the mock GPUs' fake CUDA driver measures.
func writeCUDARates(t *testing.T, root string, rates map[string]gpumock.CUDARates) {
	t.Helper()
	if err := gpumock.WriteCUDARates(host.NewRoot(root), rates); err != nil {
		t.Fatal(err)
	}
}
