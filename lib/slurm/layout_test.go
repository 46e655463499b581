package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/host"
)

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	mkdirs(t, dir, filepath.Dir(rel))
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A stale or second slurmstepd.scope near the top does not hide the live
// jobs deeper (slurmd in a container, or a nested slice): job_<id> counts
// at any depth, in every scope, and nothing below a job is walked.
func TestJobCgroupsAnyDepth(t *testing.T) {
	root := t.TempDir()
	deep := "sys/fs/cgroup/system.slice/docker-0a1b.scope/system.slice/system-slurm.slice/system-slurm-gpu.slice/gpu1_slurmstepd.scope"
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmstepd.scope", deep+"/job_1/step_0/user/task_0", deep+"/job_1/step_0/job_77")
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
	jc, err := FindJobCgroups(host.NewRoot(root))
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("1", "") || jc.Has("77", "") || jc.Has("2", "") {
		t.Errorf("Has(1)=%v Has(77)=%v Has(2)=%v; want only job 1 (nothing under a job is walked)", jc.Has("1", ""), jc.Has("77", ""), jc.Has("2", ""))
	}
	if want := []string{"/" + deep, "/sys/fs/cgroup/system.slice/slurmstepd.scope"}; !slices.Equal(jc.Scopes, want) {
		t.Errorf("Scopes = %q, want %q", jc.Scopes, want)
	}
}

// A symlink is never followed (v1's cpu -> cpu,cpuacct, or one an
// attacker made): a job seen only through one does not count.
func TestJobCgroupsNoSymlinks(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_4", "elsewhere/job_5")
	os.Symlink("cpu,cpuacct", filepath.Join(root, "sys/fs/cgroup/cpu"))
	os.Symlink("../../../../../elsewhere", filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/more"))
	jc, err := FindJobCgroups(host.NewRoot(root))
	if err != nil || !jc.Has("4", "") || jc.Has("5", "") || len(jc.Jobs) != 1 {
		t.Fatalf("jobs %q, err %v; want only cpu,cpuacct's job_4", jc.Jobs, err)
	}
}

// A folder that cannot be read (permission denied) leaves which jobs have
// a cgroup unknown: an error, never "no cgroup". Past the walk's bounds
// likewise.
func TestJobCgroupsUnreadable(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmstepd.scope", "sys/fs/cgroup/system.slice/docker-1.scope/slurmstepd.scope/job_3")
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset\n")
	locked := filepath.Join(root, "sys/fs/cgroup/system.slice/docker-1.scope")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	var jc *JobCgroups
	var err error
	fakeproc.WithoutDACOverride(t, func() { jc, err = FindJobCgroups(host.NewRoot(root)) })
	if !errors.Is(err, os.ErrPermission) || jc != nil {
		t.Errorf("FindJobCgroups = %+v, %v; want permission denied", jc, err)
	}

	deep := t.TempDir()
	writeFile(t, deep, "sys/fs/cgroup/cgroup.controllers", "cpuset\n")
	mkdirs(t, deep, "sys/fs/cgroup/"+strings.Repeat("a/", maxCgroupDepth+1))
	if _, err := FindJobCgroups(host.NewRoot(deep)); !errors.Is(err, ErrCgroupTreeTooLarge) {
		t.Errorf("a tree deeper than the bound: %v", err)
	}
}

// Only a root process running slurmd or slurmstepd counts: a user's
// process named like one (or a copy of the program) does not, nor a root
// process of another program with a slurmstepd command line. A process
// whose exe cannot be read while it is named like Slurm's makes the scan
// fail; one named otherwise is passed over.
func TestScanDaemons(t *testing.T) {
	dir := t.TempDir()
	fakeproc.Add(t, dir, 812, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd --systemd", "0::/system.slice/slurmd.service\n")
	fakeproc.Add(t, dir, 900, 0, "usr/sbin/slurmstepd", "slurmstepd: [7.extern]", "0::/system.slice/slurmstepd.scope/job_7/step_extern/slurm\n")
	fakeproc.Add(t, dir, 901, 0, "usr/sbin/slurmstepd", "slurmstepd: [8.0+1]", "0::/system.slice/slurmstepd.scope/job_8/step_0/slurm\n")
	fakeproc.Add(t, dir, 2000, 1000, "home/alice/slurmstepd", "slurmstepd: [9.extern]", "0::/user.slice\n")
	fakeproc.Add(t, dir, 2001, 0, "usr/bin/python3", "slurmstepd: [10.extern]", "0::/system.slice/cron.service\n")
	writeFile(t, dir, "proc/2/comm", "kthreadd\n") // a kernel thread: no exe
	writeFile(t, dir, "proc/sys/kernel/hostname", "n1\n")
	d, err := ScanDaemons(host.NewRoot(dir))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range slices.Concat(d.Slurmd, d.Stepd) {
		pids = append(pids, p.PID)
	}
	if !slices.Equal(pids, []int{812, 900, 901}) {
		t.Errorf("daemons %v, want 812 900 901", pids)
	}
	// Debian's and Ubuntu's Slurm: /proc/<pid>/exe names slurmd-wlm and
	// slurmstepd-wlm (/usr/sbin/slurmd links to them through
	// update-alternatives), as seen in the VM of make test-node.
	deb := t.TempDir()
	fakeproc.Add(t, deb, 267, 0, "usr/sbin/slurmd-wlm", "/usr/sbin/slurmd --systemd", "0::/system.slice/slurmd.service\n")
	fakeproc.Add(t, deb, 286, 0, "usr/sbin/slurmstepd-wlm", "slurmstepd: [1.extern]", "0::/system.slice/gpunode_slurmstepd.scope/job_1/step_extern/slurm\n")
	fakeproc.Add(t, deb, 290, 0, "usr/sbin/slurmd-wlmx", "/usr/sbin/slurmd", "0::/system.slice/other.service\n")
	if d, err := ScanDaemons(host.NewRoot(deb)); err != nil || len(d.Slurmd) != 1 || d.Slurmd[0].PID != 267 || len(d.Stepd) != 1 || !d.HasStepd("1") {
		t.Errorf("Debian's slurmd-wlm: %+v, %v; want slurmd 267 and slurmstepd 286", d, err)
	}
	if d.Slurmd[0].Cgroups[""] != "/system.slice/slurmd.service" {
		t.Errorf("slurmd's cgroups %q", d.Slurmd[0].Cgroups)
	}
	for job, want := range map[string]bool{"7": true, "8": true, "9": false, "10": false, "1": false} {
		if d.HasStepd(job) != want {
			t.Errorf("HasStepd(%s) = %v", job, !want)
		}
	}
	// exe not a link (EINVAL, as EACCES would be): named slurmstepd, the
	// scan cannot tell; named otherwise, it is passed over.
	writeFile(t, dir, "proc/3000/exe", "")
	writeFile(t, dir, "proc/3000/comm", "bash\n")
	writeFile(t, dir, "proc/3000/cmdline", "bash\x00")
	if _, err := ScanDaemons(host.NewRoot(dir)); err != nil {
		t.Errorf("an unreadable bash: %v", err)
	}
	writeFile(t, dir, "proc/3000/comm", "slurmstepd\n")
	if _, err := ScanDaemons(host.NewRoot(dir)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("an unreadable slurmstepd: %v, want an error", err)
	}
}

func TestStepJob(t *testing.T) {
	for cmd, want := range map[string]string{
		"slurmstepd: [12.extern]": "12", "slurmstepd: [12.batch]": "12", "slurmstepd: [3.0]": "3",
		"slurmstepd: [40.2+1]": "40", "slurmstepd: [5.batch stepmgr]": "5", "[6.interactive]": "6",
		"slurmstepd infinity": "", "slurmstepd: [x.0]": "", "slurmstepd: [12": "", "slurmstepd: []": "",
	} {
		got, ok := StepJob(cmd)
		if got != want || ok != (want != "") {
			t.Errorf("StepJob(%q) = %q, %v; want %q", cmd, got, ok, want)
		}
	}
}

// slurmd is found from the pid file slurm.conf names (SLURM_CONF, %n),
// and by its process when the file is stale; several slurmd per host are
// all found.
func TestFindLayoutSlurmd(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "srv/slurm/slurm.conf", "ClusterName=c\nSlurmdPidFile=/run/slurmd-%n.pid\n")
	writeFile(t, dir, "proc/sys/kernel/hostname", "host1\n")
	writeFile(t, dir, "run/slurmd-gpu1.pid", "812\n")
	fakeproc.Add(t, dir, 812, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd -N gpu1", "0::/system.slice/slurmd@gpu1.service\n")
	fakeproc.Add(t, dir, 813, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd -N gpu2", "0::/system.slice/slurmd@gpu2.service\n")
	l, err := FindLayout(host.NewRoot(dir), "/srv/slurm/slurm.conf", "gpu1")
	if err != nil {
		t.Fatal(err)
	}
	if l.PidFile != "/run/slurmd-gpu1.pid" || len(l.Slurmd) != 2 || l.Slurmd[0].PID != 812 || l.Slurmd[1].PID != 813 {
		t.Errorf("pid file %s, slurmd %+v", l.PidFile, l.Slurmd)
	}
	// Stale: the pid file names a process that is gone, or a user's.
	writeFile(t, dir, "run/slurmd-gpu1.pid", "4242\n")
	if l, err := FindLayout(host.NewRoot(dir), "/srv/slurm/slurm.conf", "gpu1"); err != nil || len(l.Slurmd) != 2 || !strings.Contains(l.PidNote, "stale") {
		t.Errorf("stale pid file: %+v, %v", l, err)
	}
	// No slurmd at all: the layout cannot be told.
	for _, pid := range []string{"812", "813"} {
		os.RemoveAll(filepath.Join(dir, "proc", pid))
	}
	fakeproc.Add(t, dir, 4242, 1000, "home/u/slurmd", "slurmd", "0::/user.slice\n")
	if _, err := FindLayout(host.NewRoot(dir), "/srv/slurm/slurm.conf", "gpu1"); !errors.Is(err, ErrNoSlurmd) {
		t.Errorf("no slurmd: %v", err)
	}
}
