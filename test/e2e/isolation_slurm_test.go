package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/test/slurmharness"
)

// isolationConfig confines host services to the first core of each NUMA
// node (dgxh100: OS CPUs 0,56,112,168), munge excepted.
const isolationConfig = `
[general]
log_file = ""
deadline = "60s"
metrics_dir = ""
[gres]
conf = "/etc/slurm/gres.conf"
[isolation]
exclude = ["munge.service"]
[profiles.default]
housekeeping_cpus = {cores_per_numa = 1}
`

// TestIsolationInSlurm: with housekeeping_cpus in the default profile,
// a real Slurm's Prolog= confines the fixture root's service cgroups while
// the job runs (the job reads them itself), never slurmd, an excluded unit
// or Slurm's job cgroups; after the job the epilog puts them back.
// gpuprep-gres --format slurm prints the matching CpuSpecList=.
func TestIsolationInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	if err := os.WriteFile(n.cfg, []byte(isolationConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cgroups := filepath.Join(n.root, "sys/fs/cgroup")
	units := []string{"system.slice/cron.service", "system.slice/munge.service", "system.slice/slurmd.service",
		"system.slice/slurmstepd.scope/job_999", "user.slice", "init.scope"}
	for _, u := range units {
		for f, c := range map[string]string{"cgroup.controllers": "cpuset cpu memory pids", "cpuset.cpus": "", "cgroup.procs": ""} {
			p := filepath.Join(cgroups, u, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodeLine, _, code := runBin(t, "gpuprep-gres", "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--format", "slurm")
	if code != 0 || !strings.Contains(nodeLine, " CpuSpecList=0,1,112,113") {
		t.Errorf("gpuprep-gres --format slurm (code %d):\n%s\nwant CpuSpecList=0,1,112,113", code, nodeLine)
	}
	args := " --root " + n.root + " --gpu-backend none --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	c := slurmharness.Start(t, slurmharness.Options{
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	read := "for u in " + strings.Join(units, " ") + "; do printf '%s=%s\\n' $u \"$(cat " + cgroups + "/$u/cpuset.cpus)\"; done"
	out := c.MustSrun("-n1", "sh", "-c", read)
	want := map[string]string{
		"system.slice/cron.service": "0,56,112,168", "user.slice": "0,56,112,168", "init.scope": "0,56,112,168",
		"system.slice/munge.service": "", "system.slice/slurmd.service": "", "system.slice/slurmstepd.scope/job_999": "",
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		u, v, _ := strings.Cut(l, "=")
		if w, ok := want[u]; !ok || v != w {
			t.Errorf("inside the job: %s = %q, want %q", u, v, w)
		}
	}
	// After the job (the epilog runs after its end): every unit back.
	var left []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		for _, u := range units {
			if b, _ := os.ReadFile(filepath.Join(cgroups, u, "cpuset.cpus")); strings.TrimSpace(string(b)) != "" {
				left = append(left, u+"="+string(b))
			}
		}
		if len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("after the job, still confined: %v\n%s", left, c.LogTails(20))
	}
}
