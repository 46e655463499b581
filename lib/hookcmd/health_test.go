package hookcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/hooktest"
)

func TestHealthFlag(t *testing.T) {
	root, cfg, spool := hooktest.HealthRoot(t, "[health]\nnvlinks = -1\n")
	args := func(extra ...string) []string {
		return append([]string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", spool, "--health"}, extra...)
	}
	code, out, stderr := mainRun("prolog", nil, args()...)
	if code != 0 || !strings.Contains(out, "health (read-only): GPU backend mock:dgxh100, 8 GPUs") ||
		!strings.Contains(out, "gpu_count") || !strings.Contains(out, "8 GPUs") || !strings.Contains(out, "nvlinks") {
		t.Fatalf("healthy: exit %d\n%s\n%s", code, out, stderr)
	}
	hooktest.InjectFault(t, root, 3, gpumock.Faults{ECCVolatileUncorrected: 2})
	code, out, _ = mainRun("prolog", nil, args("--json")...)
	var rep struct {
		GPUs    int `json:"gpus"`
		Results []struct{ Check, Scope, Status, Severity, Reason, Value string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.GPUs != 8 {
		t.Fatalf("faulty --json: exit %d, %v\n%s", code, err, out)
	}
	found := false
	for _, r := range rep.Results {
		if r.Check == "ecc_volatile" && r.Status == "fail" {
			found = r.Reason == "GPU 3 (0000:5d:00.0): 2 volatile uncorrectable ECC errors" && r.Severity == "fatal"
		}
		if r.Check == "gpu_count" && r.Value != "8 GPUs" {
			t.Errorf("gpu_count %+v", r)
		}
	}
	if !found {
		t.Errorf("ECC fault not reported:\n%s", out)
	}
	// procfs: no NVML, the NVML checks are skipped and say so.
	code, out, _ = mainRun("prolog", nil, "--root", root, "--gpu-backend", "procfs", "--config", cfg, "--state-dir", spool, "--health")
	if code != 0 || !strings.Contains(out, "the procfs GPU backend cannot read ECC counters (needs NVML)") || !strings.Contains(out, "8 GPUs") {
		t.Errorf("procfs: exit %d\n%s", code, out)
	}
	if _, err := os.Lstat(spool); !os.IsNotExist(err) {
		t.Errorf("--health created the spool (%v)", err)
	}
}

// A fatal health fault on one of the job's GPUs fails the prolog before it
// changes anything, the reason as the first stderr line; a fault on a GPU
// the job does not use does not.
func TestPrologHealthFault(t *testing.T) {
	root, cfg, spool := hooktest.HealthRoot(t, "")
	hooktest.InjectFault(t, root, 3, gpumock.Faults{ECCVolatileUncorrected: 2})
	args := []string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", spool}
	env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "dave", "SLURM_JOB_GPUS": "0,1"}
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 {
		t.Fatalf("job on GPUs 0,1: exit %d: %s", code, stderr)
	}
	env = map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "dave", "SLURM_JOB_GPUS": "2,3", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	code, _, stderr := mainRun("prolog", env, args...)
	want := "gpuprep-prolog: health: ECC_UNCORRECTABLE reset_gpu: GPU 3 (0000:5d:00.0): 2 volatile uncorrectable ECC errors\n"
	if code != 1 || stderr != want {
		t.Errorf("job on GPUs 2,3: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, out, _ := mainRun("prolog", env, append(args, "--dry-run")...)
	if code != 1 || !strings.Contains(out, "health: ecc_volatile (fatal): GPU 3 (0000:5d:00.0): 2 volatile uncorrectable ECC errors") {
		t.Errorf("dry run: exit %d\n%s", code, out)
	}
}

// The epilog restores the node, then fails (a node error) when a process
// of the finished job is still on one of its GPUs.
func TestEpilogHealthLeftover(t *testing.T) {
	root, cfg, spool := hooktest.HealthRoot(t, "")
	args := []string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", spool}
	env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "dave", "SLURM_JOB_GPUS": "2,3", "SLURM_SCRIPT_CONTEXT": "epilog_slurmd"}
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 {
		t.Fatalf("prolog: exit %d: %s", code, stderr)
	}
	p := filepath.Join(root, "proc/4242/cgroup")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("0::/system.slice/slurmstepd.scope/job_7/step_0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hooktest.InjectFault(t, root, 3, gpumock.Faults{Processes: []int{4242}})
	code, _, stderr := mainRun("epilog", env, args...)
	want := "gpuprep-epilog: health: PROCESS_LEFT investigate: GPU 3 (0000:5d:00.0): process 4242 of job 7 still on the GPU after the job\n"
	if code != 1 || stderr != want {
		t.Errorf("epilog: exit %d, stderr %q, want %q", code, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(spool, "job-7.json")); !os.IsNotExist(err) {
		t.Errorf("the job's record is still there: the node was not restored (%v)", err)
	}
}

// --check-config checks the health model file too.
func TestCheckConfigModelFile(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models.toml")
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[health]\nmodel_file = \""+models+"\"\n"), 0o644)
	os.WriteFile(models, []byte("[models.\"NVIDIA H100 80GB HBM3\"]\nnvlinks = 18\n"), 0o644)
	code, out, stderr := mainRun("prolog", nil, "--config", cfg, "--gpu-backend", "none", "--check-config")
	if code != 0 || !strings.Contains(out, "health model file "+models+" is valid (1 GPU model)") {
		t.Errorf("good: exit %d\n%s%s", code, out, stderr)
	}
	os.WriteFile(models, []byte("[models.\"NVIDIA H100 80GB HBM3\"]\nnvlink = 18\n"), 0o644)
	code, _, stderr = mainRun("prolog", nil, "--config", cfg, "--gpu-backend", "none", "--check-config")
	if code != 2 || !strings.Contains(stderr, models+`: unknown key models."NVIDIA H100 80GB HBM3".nvlink`) {
		t.Errorf("bad: exit %d %s", code, stderr)
	}
}
