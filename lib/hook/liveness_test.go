package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/nodedesc"
)

// addProcess is fakeproc.Add with one cgroup v2 path ("system.slice/x").
func addProcess(t *testing.T, root string, pid, uid int, exe, cmdline, cgroup string) {
	t.Helper()
	fakeproc.Add(t, root, pid, uid, exe, cmdline, "0::/"+cgroup+"\n")
}

// slurmdIn moves the fixture's slurmd (fixturegen's, process 1482) into
// the cgroup v2 cgroup cg.
func (e *env) slurmdIn(cg string) {
	e.t.Helper()
	e.write("proc/1482/cgroup", "0::/"+cg+"\n")
}

// released says whether a prolog's outcome released job.
func released(out *Outcome, job string) bool {
	for _, r := range out.Released {
		if r.Job == job {
			return true
		}
	}
	return false
}

// A stale slurmstepd.scope near the top (left by an earlier slurmd) while
// slurmd and the live jobs run deeper (in a container's scope): job 2's
// prolog must not release job 1, whose cgroup is there. Once job 1's
// cgroup is gone, it is released.
func TestLiveJobDeeperThanStaleScope(t *testing.T) {
	e := newRecoveryEnv(t)
	e.slurmdIn("system.slice/docker-0a1b.scope/system.slice/slurmd.service")
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope"), 0o755)
	job1 := filepath.Join(e.root, "sys/fs/cgroup/system.slice/docker-0a1b.scope/system.slice/slurmstepd.scope/job_1")
	os.MkdirAll(filepath.Join(job1, "step_extern"), 0o755)
	e.prolog(1, []int{0}, "")
	if out := e.prolog(2, []int{1}, ""); released(out, "1") {
		t.Fatalf("job 2's prolog released the live job 1: %+v", out.Released)
	}
	if s := e.settings(0); s.ComputeMode != "exclusive_process" {
		t.Errorf("live job 1's GPU restored under it: %+v", s)
	}
	os.RemoveAll(job1)
	os.MkdirAll(filepath.Join(filepath.Dir(job1), "job_2"), 0o755)
	if out := e.prolog(3, []int{2}, ""); !released(out, "1") || released(out, "2") {
		t.Errorf("after job 1's cgroup went: released %+v, want job 1 only", out.Released)
	}
}

// Without a cgroup, a job's slurmstepd keeps it alive: a root process
// running slurmstepd named "slurmstepd: [<id>.extern]". A user's process
// with that name (even running a copy of slurmstepd), or a root process of
// another program, keeps nothing alive.
func TestStepdKeepsJobAlive(t *testing.T) {
	e := newRecoveryEnv(t)
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope"), 0o755)
	e.prolog(7, []int{0}, "")
	addProcess(t, e.root, 5000, 0, "usr/sbin/slurmstepd", "slurmstepd: [7.extern]", "system.slice/slurmstepd.scope/job_7/step_extern/slurm")
	if out := e.prolog(8, []int{1}, ""); released(out, "7") {
		t.Fatalf("job 7, whose slurmstepd runs, released: %+v", out.Released)
	}
	os.RemoveAll(filepath.Join(e.root, "proc/5000"))
	addProcess(t, e.root, 6000, 1000, "home/mallory/slurmstepd", "slurmstepd: [7.extern]", "user.slice/user-1000.slice/session-3.scope")
	addProcess(t, e.root, 6001, 0, "usr/bin/python3", "slurmstepd: [7.extern]", "system.slice/cron.service")
	if out := e.prolog(9, []int{2}, ""); !released(out, "7") {
		t.Errorf("job 7 kept alive by look-alikes of its slurmstepd: released %+v", out.Released)
	}
}

// A folder of the cgroup tree that cannot be read (permission denied)
// says nothing about the jobs in it: job 1, whose cgroup may be there, is
// not released.
func TestUnreadableCgroupKeepsJob(t *testing.T) {
	e := newRecoveryEnv(t)
	e.slurmdIn("system.slice/docker-0a1b.scope/system.slice/slurmd.service")
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope"), 0o755)
	ctr := filepath.Join(e.root, "sys/fs/cgroup/system.slice/docker-0a1b.scope")
	os.MkdirAll(filepath.Join(ctr, "system.slice/slurmstepd.scope/job_1/step_extern"), 0o755)
	e.prolog(1, []int{0}, "")
	if err := os.Chmod(ctr, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ctr, 0o755) })
	var out *Outcome
	var err error
	fakeproc.WithoutDACOverride(t, func() { out, err = Prolog(context.Background(), e.opts(2, []int{1}, "")) })
	if err != nil {
		t.Fatal(err)
	}
	if released(out, "1") {
		t.Errorf("job 1 released although its cgroup could not be looked for: %+v", out.Released)
	}
}

// A dead job's notices for srunwrap (/run/gpuprep/jobs/<id>) go with its
// release, as after its epilog; the releasing job's own stay.
func TestReleasedJobNoticesRemoved(t *testing.T) {
	e := newRecoveryEnv(t)
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmstepd.scope/job_2"), 0o755)
	e.prolog(1, []int{0}, "")
	r := e.opts(1, nil, "").Root
	for _, job := range []uint64{1, 2} {
		if err := nodedesc.WriteNotice(r, nodedesc.Notice{Job: job, Messages: []string{"profile \"x\" not found"}}); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.prolog(3, []int{1}, ""); !released(out, "1") {
		t.Fatalf("dead job 1 not released: %+v", out.Released)
	}
	if _, err := os.Stat(r.Path(nodedesc.NoticeDir + "/1")); !os.IsNotExist(err) {
		t.Errorf("released job 1's notices left behind (%v)", err)
	}
	if n, err := nodedesc.LoadNotice(r, 2); err != nil || len(n.Messages) != 1 {
		t.Errorf("live job 2's notices: %+v, %v", n, err)
	}
}

// Slurm 26.05 names a job's cgroup after its SLUID (SLURM_JOB_SLUID), not
// job_<id>: the job lives while that cgroup exists and is released once it
// is gone, with the reason naming the cgroup looked for.
func TestLiveJobBySLUID(t *testing.T) {
	e := newRecoveryEnv(t)
	scope := filepath.Join(e.root, "sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope")
	job1 := filepath.Join(scope, "s6KSM8TX3WZG00")
	os.MkdirAll(filepath.Join(job1, "step_extern"), 0o755)
	o := e.opts(1, []int{0}, "")
	o.Job.SLUID = "s6KSM8TX3WZG00"
	if _, err := Prolog(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if out := e.prolog(2, []int{1}, ""); released(out, "1") {
		t.Fatalf("job 2's prolog released the live job 1 (its cgroup %s is there): %+v", job1, out.Released)
	}
	os.RemoveAll(job1)
	out := e.prolog(3, []int{2}, "")
	if !released(out, "1") {
		t.Fatalf("after job 1's cgroup went: released %+v, want job 1", out.Released)
	}
	for _, r := range out.Released {
		if r.Job == "1" && !strings.Contains(r.Reason, "no cgroup s6KSM8TX3WZG00 under") {
			t.Errorf("reason %q does not name the SLUID cgroup looked for", r.Reason)
		}
	}
}

// On a node whose Slurm uses no cgroups, a job with no cgroup and no
// slurmstepd may be alive (between its prolog and its first step, or with
// no step at all): it is never released for that. Cgroups a user names
// like Slurm's in their own delegated subtree (job_5, x-slurmstepd.scope,
// even slurmstepd.scope) do not make Slurm's tree look present.
func TestUserNamedCgroupsKeepSlurmAbsent(t *testing.T) {
	e := newRecoveryEnv(t)
	user := "sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service"
	os.MkdirAll(filepath.Join(e.root, "sys/fs/cgroup/system.slice/slurmd.service"), 0o755)
	e.prolog(1, []int{0}, "")
	for _, cg := range []string{"app.slice/job_5", "x-slurmstepd.scope/job_6", "app.slice/slurmstepd.scope/job_7", "gpu_slurmstepd.scope"} {
		os.MkdirAll(filepath.Join(e.root, user, cg), 0o755)
	}
	if out := e.prolog(2, []int{1}, ""); released(out, "1") {
		t.Errorf("live job 1 released because of the user's cgroups: %+v", out.Released)
	}
}
