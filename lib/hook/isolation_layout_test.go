package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/config"
)

// When where slurmd and the jobs run cannot be told (no slurmd process in
// /proc: here a node whose slurmd the fixture lacks), the prolog confines
// nothing, skips housekeeping_cpus with the reason, and tells the job.
func TestIsolationSkippedOnUnknownLayout(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	cfg, err := config.Parse("test.toml", []byte("[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	// A nested slurm slice holds slurmd and the jobs: with no slurmd to
	// find, its name could only be guessed.
	slice := "system.slice/system-slurm.slice/system-slurm-gpu.slice"
	addUnits(t, e.root, "system.slice", "system.slice/system-slurm.slice", slice, "system.slice/cron.service", slice+"/slurmd.service",
		slice+"/slurmstepd.scope", slice+"/slurmstepd.scope/job_1", "user.slice", "init.scope")
	for _, p := range []string{"proc/1482", "run/slurmd.pid"} {
		if err := os.RemoveAll(filepath.Join(e.root, p)); err != nil {
			t.Fatal(err)
		}
	}
	out := e.prolog(1, nil, "")
	for _, c := range out.Changes {
		if c.ID.Name == "housekeeping_cpus" {
			t.Errorf("housekeeping_cpus changed: %+v", c)
		}
	}
	skipped := false
	for _, s := range out.Skipped {
		skipped = skipped || s.ID.Name == "housekeeping_cpus" && strings.Contains(s.Reason, "cannot tell where slurmd and the jobs run")
	}
	if !skipped {
		t.Errorf("housekeeping_cpus not skipped with the reason: %+v", out.Skipped)
	}
	told := false
	for _, n := range out.Notices {
		told = told || strings.Contains(n, "housekeeping_cpus skipped on this node") && strings.Contains(n, "slurmd")
	}
	if !told {
		t.Errorf("the job is not told: notices %q", out.Notices)
	}
	for _, cg := range []string{"system.slice", "system.slice/cron.service", "system.slice/system-slurm.slice", slice, "user.slice", "init.scope"} {
		if got := e.read("sys/fs/cgroup/" + cg + "/cpuset.cpus"); got != "" {
			t.Errorf("%s confined to %q", cg, got)
		}
	}
}
