package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/internal/testroot"
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
// jobs deeper (slurmd in a container, or a nested slice): each scope next to
// slurmd's cgroup or a cgroup above it counts, with its jobs, and nothing
// below a job is read.
func TestJobCgroupsAnyDepth(t *testing.T) {
	root := t.TempDir()
	slice := "system.slice/docker-0a1b.scope/system.slice/system-slurm.slice/system-slurm-gpu.slice"
	deep := "sys/fs/cgroup/" + slice + "/gpu1_slurmstepd.scope"
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmstepd.scope", deep+"/job_1/step_0/user/task_0", deep+"/job_1/step_0/job_77",
		"sys/fs/cgroup/"+slice+"/slurmd.service")
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
	addSlurmd(t, root, slice+"/slurmd.service")
	jc, err := findJobs(t, root)
	if err != nil || !jc.Present() {
		t.Fatalf("present=%v err=%v", jc.Present(), err)
	}
	if !jc.Has("1", "") || jc.Has("77", "") || jc.Has("2", "") {
		t.Errorf("Has(1)=%v Has(77)=%v Has(2)=%v; want only job 1 (nothing under a job is read)", jc.Has("1", ""), jc.Has("77", ""), jc.Has("2", ""))
	}
	if want := []string{"/" + deep, "/sys/fs/cgroup/system.slice/slurmstepd.scope"}; !slices.Equal(jc.Scopes, want) {
		t.Errorf("Scopes = %q, want %q", jc.Scopes, want)
	}
}

// Where Slurm's scope is found from: the cgroup of a root slurmstepd in it
// (slurmd elsewhere, as with Slice= on Slurm before 25.11, which puts its
// scope in system.slice whatever slurmd's slice), slurmd started by hand
// (Slurm moves it into <scope>/slurmd), and system.slice below PID 1's
// parent cgroup, where Slurm's plugin computes it (a container's PID 1).
func TestJobCgroupsAnchors(t *testing.T) {
	for name, c := range map[string]struct {
		prep  func(t *testing.T, root string)
		scope string
	}{
		"a slurmstepd's cgroup": {func(t *testing.T, root string) {
			addSlurmd(t, root, "slurm.slice/slurmd.service/slurmd")
			fakeproc.Add(t, root, 900, 0, "usr/sbin/slurmstepd", "slurmstepd infinity", "0::/system.slice/slurmstepd.scope/system\n")
		}, "system.slice/slurmstepd.scope"},
		"slurmd in the scope": {func(t *testing.T, root string) {
			addSlurmd(t, root, "system.slice/n1_slurmstepd.scope/slurmd")
		}, "system.slice/n1_slurmstepd.scope"},
		"PID 1's parent": {func(t *testing.T, root string) {
			addSlurmd(t, root, "slurm.slice/slurmd.service")
			writeFile(t, root, "proc/1/cgroup", "0::/machine.slice/ctr1.scope/init.scope\n")
		}, "machine.slice/ctr1.scope/system.slice/slurmstepd.scope"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
			mkdirs(t, root, "sys/fs/cgroup/slurm.slice/slurmd.service/slurmd", "sys/fs/cgroup/"+c.scope+"/job_4/step_0",
				"sys/fs/cgroup/other.slice/slurmstepd.scope/job_5")
			c.prep(t, root)
			jc, err := findJobs(t, root)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"/sys/fs/cgroup/" + c.scope}; !slices.Equal(jc.Scopes, want) || !jc.Has("4", "") || jc.Has("5", "") {
				t.Errorf("Scopes = %q (Has(4)=%v, Has(5)=%v), want %q: other.slice's is placed by nothing of Slurm's", jc.Scopes, jc.Has("4", ""), jc.Has("5", ""), want)
			}
		})
	}
}

// lowerCgroupBound sets maxCgroupDirs to n for the test.
func lowerCgroupBound(t *testing.T, n int) {
	old := maxCgroupDirs
	maxCgroupDirs = n
	t.Cleanup(func() { maxCgroupDirs = old })
}

// userTree is a user's delegated subtree (systemd's user manager).
const userTree = "sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service"

// Cgroups a user names like Slurm's in their own subtree (job_5,
// x-slurmstepd.scope, even slurmstepd.scope) are not Slurm's, and a
// subtree of any depth or size there is never read: on a node whose Slurm
// uses no cgroups, the tree is not present.
func TestJobCgroupsUserSubtree(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service", userTree+"/app.slice/job_5", userTree+"/x-slurmstepd.scope/job_6",
		userTree+"/app.slice/slurmstepd.scope/job_7", userTree+"/slurmstepd.scope/s6KSM8TX3WZG00",
		"sys/fs/cgroup/user.slice/user-1000.slice/n1_slurmstepd.scope/job_8", userTree+"/app.slice/"+strings.Repeat("d/", 40))
	lowerCgroupBound(t, 100)
	for i := range maxCgroupDirs + 1 {
		mkdirs(t, root, fmt.Sprintf("%s/app.slice/many/c%d", userTree, i))
	}
	addSlurmd(t, root, "system.slice/slurmd.service")
	// The user's own processes in their cgroups, one named slurmstepd.
	fakeproc.Add(t, root, 7000, 1000, "home/u/slurmstepd", "slurmstepd: [6.0]", "0::/user.slice/user-1000.slice/user@1000.service/x-slurmstepd.scope/job_6\n")
	for name, daemons := range map[string]bool{"slurmd known": true, "slurmd not known": false} {
		t.Run(name, func(t *testing.T) {
			var d *Daemons
			if daemons {
				var err error
				if d, err = ScanDaemons(host.NewRoot(root)); err != nil || len(d.Slurmd) != 1 {
					t.Fatalf("daemons %+v, %v", d, err)
				}
			}
			jc, err := FindJobCgroups(host.NewRoot(root), d)
			if err != nil {
				t.Fatal(err)
			}
			if jc.Present() || len(jc.Jobs) > 0 {
				t.Errorf("the user's cgroups pass for Slurm's: scopes %q, jobs %q", jc.Scopes, jc.Jobs)
			}
		})
	}
}

// A scope next to slurmd whose folder another user owns (the hierarchy's
// root is root's) was not made by Slurm: not Slurm's.
func TestJobCgroupsOwnedByUser(t *testing.T) {
	testroot.NeedRoot(t, "give a folder away")
	root := t.TempDir()
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmd.service", "sys/fs/cgroup/system.slice/u_slurmstepd.scope/job_9",
		"sys/fs/cgroup/system.slice/slurmstepd.scope/job_1")
	if err := os.Chown(filepath.Join(root, "sys/fs/cgroup/system.slice/u_slurmstepd.scope"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	addSlurmd(t, root, "system.slice/slurmd.service")
	jc, err := findJobs(t, root)
	if err != nil || !jc.Has("1", "") || jc.Has("9", "") {
		t.Errorf("scopes %q, jobs %q, %v; want system.slice/slurmstepd.scope's job_1 only", jc.Scopes, jc.Jobs, err)
	}
}

// A symlink is never followed (v1's cpu -> cpu,cpuacct, or one an
// attacker made): a job seen only through one does not count.
func TestJobCgroupsNoSymlinks(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_4", "elsewhere/job_5")
	os.Symlink("cpu,cpuacct", filepath.Join(root, "sys/fs/cgroup/cpu"))
	os.Symlink("../../../../../elsewhere", filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/more"))
	jc, err := FindJobCgroups(host.NewRoot(root), nil)
	if err != nil || !jc.Has("4", "") || jc.Has("5", "") || len(jc.Jobs) != 1 {
		t.Fatalf("jobs %q, err %v; want only cpu,cpuacct's job_4", jc.Jobs, err)
	}
}

// A folder that cannot be read (permission denied) leaves which jobs have
// a cgroup unknown: an error, never "no cgroup". Past the search's bound
// (in folders only root can fill) likewise.
func TestJobCgroupsUnreadable(t *testing.T) {
	root := t.TempDir()
	ctr := "system.slice/docker-1.scope"
	mkdirs(t, root, "sys/fs/cgroup/system.slice/slurmstepd.scope", "sys/fs/cgroup/"+ctr+"/system.slice/slurmstepd.scope/job_3")
	writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset\n")
	addSlurmd(t, root, ctr+"/system.slice/slurmd.service")
	locked := filepath.Join(root, "sys/fs/cgroup", ctr)
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	var jc *JobCgroups
	var err error
	fakeproc.WithoutDACOverride(t, func() { jc, err = findJobs(t, root) })
	if !errors.Is(err, os.ErrPermission) || jc != nil {
		t.Errorf("FindJobCgroups = %+v, %v; want permission denied", jc, err)
	}

	lowerCgroupBound(t, 100)
	big := t.TempDir()
	writeFile(t, big, "sys/fs/cgroup/cgroup.controllers", "cpuset\n")
	for i := range maxCgroupDirs {
		mkdirs(t, big, fmt.Sprintf("sys/fs/cgroup/system.slice/s%d.service", i))
	}
	addSlurmd(t, big, "system.slice/s0.service")
	if _, err := findJobs(t, big); !errors.Is(err, ErrCgroupTreeTooLarge) {
		t.Errorf("a tree past the bound: %v", err)
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
	// exe not a link (EINVAL, as EACCES or ENAMETOOLONG would be): a root
	// process named slurmstepd, the scan cannot tell; named otherwise, it
	// is passed over.
	writeFile(t, dir, "proc/3000/exe", "")
	writeFile(t, dir, "proc/3000/status", "Name:\tbash\nUid:\t0\t0\t0\t0\n")
	writeFile(t, dir, "proc/3000/comm", "bash\n")
	writeFile(t, dir, "proc/3000/cmdline", "bash\x00")
	if _, err := ScanDaemons(host.NewRoot(dir)); err != nil {
		t.Errorf("an unreadable bash: %v", err)
	}
	writeFile(t, dir, "proc/3000/comm", "slurmstepd\n")
	if _, err := ScanDaemons(host.NewRoot(dir)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("an unreadable root slurmstepd: %v, want an error", err)
	}
	// Any other user's process is never Slurm's, whatever its name and
	// however unreadable its exe: passed over, the scan goes on.
	writeFile(t, dir, "proc/3000/status", "Name:\tslurmd\nUid:\t1000\t0\t0\t0\n")
	writeFile(t, dir, "proc/3000/comm", "slurmd\n")
	writeFile(t, dir, "proc/3000/cmdline", "/usr/sbin/slurmd\x00")
	if d, err := ScanDaemons(host.NewRoot(dir)); err != nil || len(d.Slurmd) != 1 || d.Slurmd[0].PID != 812 {
		t.Errorf("a user's unreadable slurmd: %+v, %v; want slurmd 812 only", d, err)
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
