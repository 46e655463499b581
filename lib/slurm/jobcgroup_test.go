package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gpuprep/internal/fakeproc"
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

// findJobs is FindJobCgroups on a fixture root, with the daemons
// ScanDaemons finds in its /proc.
func findJobs(t *testing.T, root string) (*JobCgroups, error) {
	t.Helper()
	d, err := ScanDaemons(host.NewRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	return FindJobCgroups(host.NewRoot(root), d)
}

// addSlurmd gives a fixture root a root slurmd in the cgroup v2 cgroup cg.
func addSlurmd(t *testing.T, root, cg string) {
	t.Helper()
	fakeproc.Add(t, root, 812, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd --systemd", "0::/"+cg+"\n")
}

func TestJobCgroupsV2(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service", "sys/fs/cgroup/system.slice/slurmstepd.scope/job_12/step_extern")
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset cpu memory\n"), 0o644)
	addSlurmd(t, root, "system.slice/slurmd.service")
	jc, err := findJobs(t, root)
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("12", "") || jc.Has("13", "") || jc.Has("1", "") {
		t.Errorf("Has(12)=%v Has(13)=%v Has(1)=%v", jc.Has("12", ""), jc.Has("13", ""), jc.Has("1", ""))
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
	addSlurmd(t, root, "system.slice/slurmd.service")
	jc, err := findJobs(t, root)
	if err != nil || jc.Present() {
		t.Fatalf("present=%v err=%v (want absent)", jc.Present(), err)
	}
}

func TestJobCgroupsV1(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/freezer/slurm/uid_1000/job_7/step_0", "sys/fs/cgroup/memory/slurm/uid_1001",
		"sys/fs/cgroup/unified/system.slice/slurmd.service", "sys/fs/cgroup/cpuset/slurm_node3/uid_5/job_9")
	jc, err := FindJobCgroups(host.NewRoot(root), nil) // v1 trees sit at each hierarchy's root, slurmd known or not
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("7", "") || !jc.Has("9", "") || jc.Has("8", "") {
		t.Errorf("Has(7)=%v Has(9)=%v Has(8)=%v", jc.Has("7", ""), jc.Has("9", ""), jc.Has("8", ""))
	}
	// The hierarchy without any job yet still counts as present.
	root2 := t.TempDir()
	mkdirs(t, root2, "sys/fs/cgroup/freezer/slurm")
	if jc, _ := FindJobCgroups(host.NewRoot(root2), nil); !jc.Present() || jc.Has("1", "") {
		t.Errorf("empty v1 slurm hierarchy: present=%v", jc.Present())
	}
}

func TestJobCgroupsNone(t *testing.T) {
	jc, err := FindJobCgroups(host.NewRoot(t.TempDir()), nil)
	if err != nil || jc.Present() || jc.Has("1", "") {
		t.Fatalf("no cgroupfs: present=%v err=%v", jc.Present(), err)
	}
}

// Slurm 26.05's cgroup/v2 plugin names a job's cgroup after its SLUID
// (seen in a Debian sid VM: gpunode_slurmstepd.scope/s6KSM8TX3WZG00), and
// the job is found by it; a SLUID-shaped name anywhere else is no job.
func TestJobCgroupsV2SLUID(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service/slurmd",
		"sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/system",
		"sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00/step_batch/user/task_0",
		"sys/fs/cgroup/system.slice/s7AAAAAAAAAAAA",
		"sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/s7bbbbbbbbbbbb")
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset cpu memory\n"), 0o644)
	addSlurmd(t, root, "system.slice/slurmd.service/slurmd")
	jc, err := findJobs(t, root)
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("1", "s6KSM8TX3WZG00") {
		t.Error("job 1 (SLUID s6KSM8TX3WZG00) has no cgroup, want found in the scope")
	}
	if jc.Has("1", "") {
		t.Error("job 1 found without its SLUID: no job_1 exists")
	}
	if jc.Has("2", "s7AAAAAAAAAAAA") {
		t.Error("a SLUID-named cgroup outside the slurmstepd scope counted as a job")
	}
	if jc.Has("3", "s7BBBBBBBBBBBB") {
		t.Error("a lower-case cgroup name (Slurm writes upper case) counted as the job's")
	}
	want := []string{"/sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00"}
	if !slices.Equal(jc.Jobs, want) {
		t.Errorf("Jobs = %q, want %q (nothing under the job is walked)", jc.Jobs, want)
	}
}

func TestParseSLUID(t *testing.T) {
	for in, want := range map[string]string{
		"s6KSM8TX3WZG00": "s6KSM8TX3WZG00",
		"S6ksm8tx3wzg00": "s6KSM8TX3WZG00",
		"sBR1JB8J1YM400": "sBR1JB8J1YM400", // Slurm's own test vector
	} {
		if got, ok := ParseSLUID(in); !ok || got != want {
			t.Errorf("ParseSLUID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "s", "6KSM8TX3WZG00x", "s6KSM8TX3WZG0", "s6KSM8TX3WZG000", "sIKSM8TX3WZG00", "sUKSM8TX3WZG00", "job_12", "s6KSM8TX3WZ/00"} {
		if got, ok := ParseSLUID(bad); ok {
			t.Errorf("ParseSLUID(%q) = %q, true; want false", bad, got)
		}
	}
}

func TestProcInJob(t *testing.T) {
	v2 := "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"
	v1 := "4:cpuset:/slurm/uid_1000/job_42/step_0\n1:name=systemd:/system.slice/slurmd.service\n"
	sl := "0::/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00/step_0\n"
	for _, c := range []struct {
		file, job, sluid string
		want             bool
	}{
		{v2, "42", "", true}, {v2, "4", "", false}, {v1, "42", "", true},
		{"0::/system.slice/slurmstepd.scope/job_421/step_0\n", "42", "", false},
		{sl, "1", "s6KSM8TX3WZG00", true}, {sl, "1", "", false}, {sl, "1", "s7AAAAAAAAAAAA", false},
		{"garbage", "42", "", false},
		{"4:cpuset:/slurm_n1/uid_1000/job_42/step_0\n", "42", "", true},
		// A user's own cgroups named like Slurm's are no job's.
		{"0::/user.slice/user-1000.slice/user@1000.service/app.slice/job_42\n", "42", "", false},
		{"0::/user.slice/user-1000.slice/user@1000.service/x_slurmstepd.scope/job_42\n", "42", "", false},
		{"0::/user.slice/user-1000.slice/user@1000.service/slurmstepd.scope/s6KSM8TX3WZG00\n", "1", "s6KSM8TX3WZG00", false},
		{"0::/system.slice/cron.service/job_42\n", "42", "", false},
		// Only the first job on the path counts: v1 hands a step's cgroup
		// to its user, who can make another job's name below it.
		{"4:cpuset:/slurm/uid_1000/job_5/step_0/slurm/uid_1/job_42\n", "42", "", false},
		{"4:cpuset:/slurm/uid_1000/job_5/step_0/slurm/uid_1/job_42\n", "5", "", true},
	} {
		if got := ProcInJob(c.file, c.job, c.sluid); got != c.want {
			t.Errorf("ProcInJob(%q, %s, %q) = %v, want %v", c.file, c.job, c.sluid, got, c.want)
		}
	}
}
