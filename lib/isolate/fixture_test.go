package isolate

import (
	"os"
	"path/filepath"
	"testing"

	"gpuprep/lib/host"
)

// v2Tree builds a cgroup v2 fixture tree the way systemd and Slurm's
// cgroup/v2 plugin lay it out on a 16-CPU node, with cpuset already enabled
// down to system.slice's children, and returns its root.
func v2Tree(t *testing.T) host.Root {
	t.Helper()
	dir := t.TempDir()
	all := "cpuset cpu io memory pids"
	files := map[string]string{
		"cgroup.controllers":     all,
		"cgroup.subtree_control": "cpuset cpu memory pids",
		"cpuset.cpus.effective":  "0-15",
	}
	for _, cg := range []string{
		"system.slice", "system.slice/cron.service", "system.slice/sshd.service",
		"system.slice/munge.service", "system.slice/slurmd.service",
		"system.slice/slurmstepd.scope", "system.slice/slurmstepd.scope/job_1",
		"system.slice/slurmstepd.scope/job_1/step_0",
		"user.slice", "user.slice/user-0.slice", "init.scope",
	} {
		files[cg+"/cgroup.controllers"] = "cpuset cpu memory pids"
		files[cg+"/cgroup.subtree_control"] = ""
		files[cg+"/cpuset.cpus"] = ""
		files[cg+"/cgroup.procs"] = ""
	}
	files["system.slice/cgroup.subtree_control"] = "cpuset cpu memory pids"
	files["system.slice/slurmstepd.scope/job_1/cpuset.cpus"] = "4-7"
	files["system.slice/slurmstepd.scope/job_1/step_0/cpuset.cpus"] = "4-7"
	writeTree(t, dir, "sys/fs/cgroup", files)
	addSlurmd(t, dir, "0::/system.slice/slurmd.service\n")
	return host.NewRoot(dir)
}

// v1Tree builds a cgroup v1 cpuset hierarchy: the root cpuset, Slurm's
// slurm/uid_0/job_1, and an admin's "daemons" cgroup.
func v1Tree(t *testing.T) host.Root {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"cpuset.cpus": "0-15", "cpuset.mems": "0-1", "tasks": "", "cgroup.procs": "",
	}
	for _, cg := range []string{"slurm", "slurm/uid_0", "slurm/uid_0/job_1", "daemons", "backup"} {
		files[cg+"/cpuset.cpus"] = "0-15"
		files[cg+"/cpuset.mems"] = "0-1"
		files[cg+"/tasks"] = ""
	}
	files["slurm/uid_0/job_1/cpuset.cpus"] = "4-7"
	writeTree(t, dir, "sys/fs/cgroup/cpuset", files)
	// The hybrid layout's cgroup2 mount, with no cpuset.
	writeTree(t, dir, "sys/fs/cgroup/unified", map[string]string{"cgroup.controllers": ""})
	addSlurmd(t, dir, "3:cpuset:/\n1:name=systemd:/system.slice/slurmd.service\n0::/system.slice/slurmd.service\n")
	return host.NewRoot(dir)
}

func writeTree(t *testing.T, dir, under string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, under, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cpusOf reads a cgroup's cpuset.cpus file as it is.
func cpusOf(t *testing.T, r host.Root, mount, cg string) string {
	t.Helper()
	s, err := r.ReadString(filepath.Join(mount, cg, "cpuset.cpus"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
