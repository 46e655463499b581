package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/config"
)

// addUnits gives a fixture root's cgroup v2 tree systemd's and Slurm's
// cgroups: services, slurmd, job 1 under slurmstepd.scope, user.slice and
// init.scope.
func addUnits(t *testing.T, root string, units ...string) {
	t.Helper()
	for _, cg := range units {
		dir := filepath.Join(root, "sys/fs/cgroup", cg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, c := range map[string]string{"cgroup.controllers": "cpuset cpu memory pids", "cpuset.cpus": "", "cgroup.procs": ""} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The prolog confines the services (not slurmd, not an excluded unit,
// never the job's cgroup) to the housekeeping CPUs; a service started
// during the job is drift; the epilog of the last job puts every cgroup
// back.
func TestHousekeepingLifecycle(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	cfg, err := config.Parse("test.toml", []byte(`
[isolation]
exclude = ["munge.service"]
[profiles.default]
housekeeping_cpus = {cores_per_numa = 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	addUnits(t, e.root, "system.slice/cron.service", "system.slice/munge.service", "system.slice/slurmd.service",
		"system.slice/slurmstepd.scope/job_1", "user.slice", "init.scope")
	if err := os.WriteFile(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope/job_1/cpuset.cpus"), []byte("4-7"), 0o644); err != nil {
		t.Fatal(err)
	}
	cpus := func(cg string) string { return e.read("sys/fs/cgroup/" + cg + "/cpuset.cpus") }

	out := e.prolog(1, nil, "")
	found := false
	for _, c := range out.Changes {
		found = found || c.ID.Name == "housekeeping_cpus" && c.From == "" && c.To == "0,56,112,168"
	}
	if !found {
		t.Fatalf("prolog changes %+v", out.Changes)
	}
	for cg, want := range map[string]string{
		"system.slice/cron.service": "0,56,112,168", "user.slice": "0,56,112,168", "init.scope": "0,56,112,168",
		"system.slice/munge.service": "", "system.slice/slurmd.service": "", "system.slice/slurmstepd.scope": "",
		"system.slice/slurmstepd.scope/job_1": "4-7",
	} {
		if got := cpus(cg); got != want {
			t.Errorf("during the job %s = %q, want %q", cg, got, want)
		}
	}
	addUnits(t, e.root, "system.slice/backup.service") // started during the job
	ep := e.epilog(1)
	drift := false
	for _, d := range ep.Drift {
		drift = drift || d.ID.Name == "housekeeping_cpus" && d.Expected == "0,56,112,168" && strings.Contains(string(d.Found), "system.slice/backup.service=;")
	}
	if !drift {
		t.Errorf("epilog drift %+v, want housekeeping_cpus naming backup.service", ep.Drift)
	}
	for _, cg := range []string{"system.slice/cron.service", "user.slice", "init.scope", "system.slice/backup.service"} {
		if got := cpus(cg); got != "" {
			t.Errorf("after the epilog %s = %q, want \"\"", cg, got)
		}
	}
	if got := cpus("system.slice/slurmstepd.scope/job_1"); got != "4-7" {
		t.Errorf("job_1 = %q", got)
	}
}
