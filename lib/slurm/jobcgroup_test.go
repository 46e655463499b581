package slurm

import (
	"os"
	"path/filepath"
	"testing"

	"gpuprep/lib/host"
)

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJobCgroupsV2(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service", "sys/fs/cgroup/system.slice/slurmstepd.scope/job_12/step_extern")
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset cpu memory\n"), 0o644)
	jc, err := FindJobCgroups(host.NewRoot(root))
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("12") || jc.Has("13") || jc.Has("1") {
		t.Errorf("Has(12)=%v Has(13)=%v Has(1)=%v", jc.Has("12"), jc.Has("13"), jc.Has("1"))
	}
	if jc.Where() != "/sys/fs/cgroup/system.slice/slurmstepd.scope" {
		t.Errorf("Where = %s", jc.Where())
	}
}

// A node whose slurmd uses no cgroups shows slurmd.service but no
// slurmstepd scope: nothing can be told, and a job must not look dead.
func TestJobCgroupsV2WithoutSlurmCgroups(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service")
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset\n"), 0o644)
	jc, err := FindJobCgroups(host.NewRoot(root))
	if err != nil || jc.Present() {
		t.Fatalf("present=%v err=%v (want absent)", jc.Present(), err)
	}
}

func TestJobCgroupsV1(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/freezer/slurm/uid_1000/job_7/step_0", "sys/fs/cgroup/memory/slurm/uid_1001",
		"sys/fs/cgroup/unified/system.slice/slurmd.service", "sys/fs/cgroup/cpuset/slurm_node3/uid_5/job_9")
	jc, err := FindJobCgroups(host.NewRoot(root))
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("7") || !jc.Has("9") || jc.Has("8") {
		t.Errorf("Has(7)=%v Has(9)=%v Has(8)=%v", jc.Has("7"), jc.Has("9"), jc.Has("8"))
	}
	// The hierarchy without any job yet still counts as present.
	root2 := t.TempDir()
	mkdirs(t, root2, "sys/fs/cgroup/freezer/slurm")
	if jc, _ := FindJobCgroups(host.NewRoot(root2)); !jc.Present() || jc.Has("1") {
		t.Errorf("empty v1 slurm hierarchy: present=%v", jc.Present())
	}
}

func TestJobCgroupsNone(t *testing.T) {
	jc, err := FindJobCgroups(host.NewRoot(t.TempDir()))
	if err != nil || jc.Present() || jc.Has("1") {
		t.Fatalf("no cgroupfs: present=%v err=%v", jc.Present(), err)
	}
}
