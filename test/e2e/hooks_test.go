package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gpuprep/internal/knobsnap"
	"gpuprep/internal/testroot"
)

// hookConfig is the configuration the hook tests run with.
const hookConfig = `
[general]
log_file = ""
deadline = "60s"
metrics_dir = ""
[profiles.default]
cpu_governor = "performance"
energy_performance_preference = "performance"
cstate_max_latency_us = 10
thp_enabled = "never"
thp_defrag = "never"
vm_swappiness = 10
kernel_numa_balancing = 0
gpu_persistence = true
gpu_compute_mode = "exclusive_process"
[gres]
conf = "/etc/slurm/gres.conf" # in the fixture root (SLURM_CONF is the harness's)
[profiles.quiet]
inherits = "default"
thp_enabled = "always"
cpu_governor = "powersave"
`

// hookNode is a simulated node with a spool and config for running the
// hook binaries directly.
type hookNode struct {
	t                *testing.T
	root, spool, cfg string
}

func newHookNode(t *testing.T) *hookNode {
	t.Helper()
	n := &hookNode{t: t, root: testroot.Unpack(t, "dgxh100"), spool: filepath.Join(t.TempDir(), "spool"), cfg: filepath.Join(t.TempDir(), "gpuprep.toml")}
	if err := os.WriteFile(n.cfg, []byte(hookConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	n.writeGresConf(pciGresConf(t, n.root))
	return n
}

// pciGresConf is a gres.conf with the root's GPUs in PCI order (as
// gpuprep-gres writes it): SLURM_JOB_GPUS=i is the i-th GPU in bus order.
func pciGresConf(t *testing.T, root string) string {
	t.Helper()
	var gres strings.Builder
	for _, d := range testroot.GPUs(t, root) {
		fmt.Fprintf(&gres, "Name=gpu File=/dev/nvidia%d\n", d.Minor)
	}
	return gres.String()
}

// writeGresConf writes the fixture root's /etc/slurm/gres.conf, which the
// hooks read to map SLURM_JOB_GPUS to GPUs.
func (n *hookNode) writeGresConf(text string) {
	n.t.Helper()
	p := filepath.Join(n.root, "etc/slurm/gres.conf")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// hookCmd prepares gpuprep-<op> for job with the environment slurmd gives
// (no PATH, no HOME), plus extra variables.
func (n *hookNode) hookCmd(op string, job int, gpus, comment string, extra ...string) *exec.Cmd {
	cmd := exec.Command(bin(n.t, "gpuprep-"+op), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool)
	cmd.Env = append([]string{
		"SLURM_SCRIPT_CONTEXT=" + op + "_slurmd", fmt.Sprintf("SLURM_JOB_ID=%d", job), "SLURM_JOB_USER=alice",
		"SLURMD_NODENAME=dgxh100-01", "SLURM_JOB_GPUS=" + gpus, "SLURM_JOB_COMMENT=" + comment,
	}, extra...)
	return cmd
}

// hook runs gpuprep-<op> and returns its exit code and stderr.
func (n *hookNode) hook(op string, job int, gpus, comment string, extra ...string) (int, string) {
	cmd := n.hookCmd(op, job, gpus, comment, extra...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal()), errb.String()
		}
		return ee.ExitCode(), errb.String()
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return 0, errb.String()
}

func (n *hookNode) must(op string, job int, gpus, comment string) {
	n.t.Helper()
	if code, stderr := n.hook(op, job, gpus, comment); code != 0 {
		n.t.Fatalf("%s job %d: exit %d: %s", op, job, code, stderr)
	}
}

func (n *hookNode) snap() knobsnap.Snapshot {
	s, err := knobsnap.Take(n.root)
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// checkClean says the spool holds no journal, no job record and no holders.
func (n *hookNode) checkClean(what string) {
	n.t.Helper()
	if _, err := os.Lstat(filepath.Join(n.spool, "journal.json")); err == nil {
		n.t.Fatalf("%s: journal left behind", what)
	}
	jobs, _ := filepath.Glob(filepath.Join(n.spool, "job-*.json"))
	if len(jobs) > 0 {
		n.t.Fatalf("%s: job records left: %v", what, jobs)
	}
	var st struct {
		Holders map[string]any `json:"holders"`
	}
	b, err := os.ReadFile(filepath.Join(n.spool, "node.json"))
	if err != nil || json.Unmarshal(b, &st) != nil {
		n.t.Fatalf("%s: node.json unreadable: %v", what, err)
	}
	if len(st.Holders) > 0 {
		n.t.Fatalf("%s: holders left: %v", what, st.Holders)
	}
}

// TestConcurrentJobs runs 50 overlapping prolog/epilog pairs on one node;
// the node ends at its baseline with its spool intact.
func TestConcurrentJobs(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	n.must("prolog", 1, "0", "")
	n.must("epilog", 1, "", "")
	base := n.snap()
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			job := 2000 + i
			gpus := fmt.Sprint(i % 8)
			comment := []string{"", "gpuprep=quiet"}[i%2]
			time.Sleep(time.Duration(i%7) * 3 * time.Millisecond)
			if code, stderr := n.hook("prolog", job, gpus, comment); code != 0 {
				errs <- fmt.Sprintf("prolog %d: exit %d: %s", job, code, stderr)
			}
			time.Sleep(time.Duration(i%5) * 5 * time.Millisecond)
			if code, stderr := n.hook("epilog", job, gpus, comment); code != 0 {
				errs <- fmt.Sprintf("epilog %d: exit %d: %s", job, code, stderr)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if d := n.snap().Diff(base, 5); len(d) != 0 {
		t.Fatalf("node not at baseline after 50 overlapping jobs: %v", d)
	}
	n.checkClean("after 50 jobs")
}
