package hookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/hooktest"
)

// TestDriverGoneDrains: a DGX H100 whose NVIDIA driver did not load (no
// /proc/driver/nvidia; its 8 GPUs still on the PCI bus) with the built-in
// --gpu-backend auto: the prolog of a GPU job, and of any job (gpu_count
// is node health), fails with the reason as the first stderr line, so
// Slurm drains the node; --health and --check-config exit 1. With an
// explicit --gpu-backend none from the admin the prolog and --health pass,
// as before.
func TestDriverGoneDrains(t *testing.T) {
	root, cfg, spool := hooktest.HealthRoot(t, "")
	if err := os.RemoveAll(filepath.Join(root, "proc/driver/nvidia")); err != nil {
		t.Fatal(err)
	}
	const reason = "gpuprep-prolog: health: GPU_MISSING reboot: 8 NVIDIA GPUs on the PCI bus (0000:18:00.0, 0000:2a:00.0, 0000:3a:00.0, ...) but no GPU backend can list them (/proc/driver/nvidia missing: driver not loaded?)"
	base := []string{"--root", root, "--config", cfg, "--state-dir", spool}
	gpuJob := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "ann", "SLURM_JOB_GPUS": "0,1", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	cpuJob := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "ann", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	for name, env := range map[string]map[string]string{"GPU job": gpuJob, "CPU job": cpuJob} {
		code, _, stderr := mainRun("prolog", env, base...)
		if first, _, _ := strings.Cut(stderr, "\n"); code != 1 || first != reason {
			t.Errorf("%s, auto: exit %d, stderr %q; want exit 1, %q", name, code, stderr, reason)
		}
	}
	code, out, stderr := mainRun("prolog", nil, append(base, "--health")...)
	if code != 1 || !strings.Contains(out, "gpu_count") || !strings.Contains(out, "fail (fatal)") || !strings.Contains(out, "no GPU backend can list them") {
		t.Errorf("--health, auto: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = mainRun("prolog", nil, "--root", root, "--config", cfg, "--check-config")
	if code != 1 || !strings.Contains(out, "health: gpu_count node: fail (fatal) GPU_MISSING reboot: 8 NVIDIA GPUs on the PCI bus") {
		t.Errorf("--check-config, auto: exit %d\n%s%s", code, out, stderr)
	}
	explicit := append(base, "--gpu-backend", "none")
	if code, _, stderr := mainRun("prolog", gpuJob, explicit...); code != 0 {
		t.Errorf("GPU job, explicit none: exit %d, %q", code, stderr)
	}
	if code, out, stderr := mainRun("prolog", nil, append(explicit, "--health")...); code != 0 || !strings.Contains(out, "the GPU backend is none") {
		t.Errorf("--health, explicit none: exit %d\n%s%s", code, out, stderr)
	}
}
