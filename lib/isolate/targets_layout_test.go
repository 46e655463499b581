package isolate

import (
	"errors"
	"os"
	"slices"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate/cgwriter"
)

// layoutTree builds a cgroup v2 tree of the given cgroups (cpuset enabled
// all the way down, no CPUs of their own; the jobs' 4-7) and returns its
// root folder.
func layoutTree(t *testing.T, cgroups ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"cgroup.controllers": "cpuset cpu io memory pids", "cgroup.subtree_control": "cpuset cpu memory pids",
		"cpuset.cpus.effective": "0-15",
	}
	for _, cg := range cgroups {
		for p := cg; p != ""; p = parent(p) {
			files[p+"/cgroup.controllers"] = "cpuset cpu memory pids"
			files[p+"/cgroup.subtree_control"] = "cpuset cpu memory pids"
			files[p+"/cpuset.cpus"] = ""
			files[p+"/cpuset.cpus.effective"] = "0-15"
		}
	}
	writeTree(t, dir, "sys/fs/cgroup", files)
	return dir
}

// applyAndCheck confines the targets to 0-3 and checks that exactly want
// were written and that none of keep changed.
func applyAndCheck(t *testing.T, r host.Root, want, keep []string) {
	t.Helper()
	h, err := Open(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Targets(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Targets = %q\nwant      %q", got, want)
	}
	before := map[string]string{}
	for _, cg := range keep {
		before[cg] = cpusOf(t, r, h.Mount(), cg)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil); err != nil {
		t.Fatal(err)
	}
	for _, cg := range keep {
		if got := cpusOf(t, r, h.Mount(), cg); got != before[cg] {
			t.Errorf("%s holds slurmd or jobs, and was confined: %q -> %q", cg, before[cg], got)
		}
	}
}

// slurmd in a nested slice (Slice=system-slurm-gpu.slice in a drop-in:
// systemd puts it at system.slice/system-slurm.slice/system-slurm-gpu.slice),
// its slurmstepd.scope four levels down: the services beside it at every
// level are confined, never a slice that holds slurmd or the jobs.
func TestTargetsNestedSlurmSlice(t *testing.T) {
	slice := "system.slice/system-slurm.slice/system-slurm-gpu.slice"
	dir := layoutTree(t, slice+"/slurmd.service", slice+"/slurmstepd.scope/job_5/step_0", slice+"/slurmstepd.scope/system",
		slice+"/munge-gpu.service", "system.slice/system-slurm.slice/slurmdbd.service", "system.slice/cron.service",
		"user.slice/user-1000.slice", "init.scope", "machine.slice/vm1.scope")
	writeTree(t, dir, "sys/fs/cgroup", map[string]string{slice + "/slurmstepd.scope/job_5/cpuset.cpus": "4-7"})
	addSlurmd(t, dir, "0::/"+slice+"/slurmd.service\n")
	want := []string{"init.scope", "system.slice/cron.service", "system.slice/system-slurm.slice/slurmdbd.service",
		slice + "/munge-gpu.service", "user.slice"}
	keep := []string{"system.slice", "system.slice/system-slurm.slice", slice, slice + "/slurmd.service",
		slice + "/slurmstepd.scope", slice + "/slurmstepd.scope/job_5", slice + "/slurmstepd.scope/job_5/step_0", "machine.slice"}
	applyAndCheck(t, host.NewRoot(dir), want, keep)
}

// slurmd inside a container's scope (docker, with systemd inside): the
// container's scope and its system.slice hold slurmd and the jobs; the
// other container and the host's services are confined.
func TestTargetsSlurmdInContainer(t *testing.T) {
	ctr := "system.slice/docker-0a1b2c.scope"
	dir := layoutTree(t, ctr+"/system.slice/slurmd.service", ctr+"/system.slice/slurmstepd.scope/job_3/step_extern",
		ctr+"/system.slice/sshd.service", ctr+"/init.scope", "system.slice/docker-9f8e7d.scope", "system.slice/containerd.service",
		"user.slice", "init.scope")
	addSlurmd(t, dir, "0::/"+ctr+"/system.slice/slurmd.service\n")
	want := []string{"init.scope", "system.slice/containerd.service", ctr + "/init.scope", ctr + "/system.slice/sshd.service",
		"system.slice/docker-9f8e7d.scope", "user.slice"}
	keep := []string{"system.slice", ctr, ctr + "/system.slice", ctr + "/system.slice/slurmd.service",
		ctr + "/system.slice/slurmstepd.scope/job_3", ctr + "/system.slice/slurmstepd.scope/job_3/step_extern"}
	applyAndCheck(t, host.NewRoot(dir), want, keep)
}

// slurmd found by its process, not by its unit's name, and every
// slurmstepd's cgroup kept: two slurmd per host in units not named
// slurmd*.service, one with a stale pid file, and a job step whose
// slurmstepd sits outside any slurmstepd.scope (slurmd restarted with
// KillMode=process left it in the old unit).
func TestTargetsSlurmdFromProcesses(t *testing.T) {
	dir := layoutTree(t, "system.slice/slurm-gpu1.service", "system.slice/slurm-gpu2.service",
		"system.slice/slurm-old.service", "system.slice/cron.service", "user.slice", "init.scope")
	addSlurmd(t, dir, "0::/system.slice/slurm-gpu1.service\n")
	fakeproc.Add(t, dir, 950, 0, "opt/slurm/sbin/slurmd", "/opt/slurm/sbin/slurmd -N gpu2", "0::/system.slice/slurm-gpu2.service\n")
	fakeproc.Add(t, dir, 990, 0, "opt/slurm/sbin/slurmstepd", "slurmstepd: [77.0]", "0::/system.slice/slurm-old.service\n")
	// A user's copy of slurmd: not Slurm's.
	fakeproc.Add(t, dir, 4000, 1000, "home/alice/slurmd", "./slurmd", "0::/user.slice\n")
	writeTree(t, dir, "run", map[string]string{"slurmd.pid": "4000\n"})
	applyAndCheck(t, host.NewRoot(dir), []string{"init.scope", "system.slice/cron.service", "user.slice"},
		[]string{"system.slice/slurm-gpu1.service", "system.slice/slurm-gpu2.service", "system.slice/slurm-old.service"})
}

// When slurmd cannot be found the layout is unknown: no target, an error
// wrapping ErrUnknownLayout, and Apply writes nothing.
func TestTargetsUnknownLayout(t *testing.T) {
	for name, prep := range map[string]func(t *testing.T, dir string){
		"no slurmd process": func(t *testing.T, dir string) {},
		"a user's slurmd": func(t *testing.T, dir string) {
			fakeproc.Add(t, dir, slurmdPID, 1000, "usr/sbin/slurmd", "/usr/sbin/slurmd", "0::/user.slice/user-1000.slice\n")
			writeTree(t, dir, "run", map[string]string{"slurmd.pid": "812\n"})
		},
		"slurmd outside this cgroup namespace": func(t *testing.T, dir string) {
			addSlurmd(t, dir, "0::/../../system.slice/slurmd.service\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := layoutTree(t, "system.slice/slurmd.service", "system.slice/slurmstepd.scope/job_1", "system.slice/cron.service", "user.slice")
			prep(t, dir)
			h, err := Open(host.NewRoot(dir))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := h.Targets(Options{}); !errors.Is(err, ErrUnknownLayout) || got != nil {
				t.Fatalf("Targets = %q, %v; want ErrUnknownLayout", got, err)
			}
			if done, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil); !errors.Is(err, ErrUnknownLayout) || len(done) > 0 {
				t.Errorf("Apply wrote %q (%v)", done, err)
			}
			for _, cg := range []string{"system.slice", "system.slice/cron.service", "user.slice"} {
				if got := cpusOf(t, host.NewRoot(dir), "/sys/fs/cgroup", cg); got != "" {
					t.Errorf("%s confined to %q", cg, got)
				}
			}
		})
	}
}

// slurmd in the root cgroup (no systemd): nothing around it is a service
// of its own, so nothing is confined.
func TestTargetsSlurmdInRootCgroup(t *testing.T) {
	dir := layoutTree(t, "slurmstepd.scope/job_1", "cron")
	addSlurmd(t, dir, "0::/\n")
	h, _ := Open(host.NewRoot(dir))
	if got, err := h.Targets(Options{}); err != nil || len(got) != 0 {
		t.Errorf("Targets = %q, %v; want none", got, err)
	}
}

// cgroup v1: a top-level cpuset cgroup an admin put slurmd in is never
// confined, nor one holding a job's slurmstepd.
func TestTargetsV1KeepsSlurmdsCgroup(t *testing.T) {
	r := v1Tree(t)
	writeTree(t, r.Dir(), "sys/fs/cgroup/cpuset", map[string]string{"daemons/slurmd/cpuset.cpus": "0-15", "jobs-extra/cpuset.cpus": "0-15"})
	if err := os.Remove(r.Path("/proc/812/cgroup")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, r.Dir(), "proc/812", map[string]string{"cgroup": "3:cpuset:/daemons/slurmd\n0::/system.slice/slurmd.service\n"})
	fakeproc.Add(t, r.Dir(), 990, 0, "usr/sbin/slurmstepd", "slurmstepd: [4.extern]", "3:cpuset:/jobs-extra\n0::/system.slice/slurmd.service\n")
	h, _ := Open(r)
	got, err := h.Targets(Options{})
	if want := []string{".", "backup"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Targets = %q, %v; want %q", got, err, want)
	}
}

// Cgroups a user names like Slurm's in the subtree systemd delegates to
// them (job_5, x-slurmstepd.scope, even slurmstepd.scope and a SLUID) are
// the user's: user.slice is confined as a whole like on any node, and
// nothing inside it is a target of its own.
func TestTargetsUserNamedSlurmCgroups(t *testing.T) {
	user := "user.slice/user-1000.slice/user@1000.service"
	dir := layoutTree(t, "system.slice/slurmd.service", "system.slice/slurmstepd.scope/job_1", "system.slice/cron.service",
		user+"/app.slice/job_5", user+"/x-slurmstepd.scope/job_6", user+"/app.slice/slurmstepd.scope/s6KSM8TX3WZG00",
		"user.slice/user-1000.slice/session-3.scope", "init.scope")
	addSlurmd(t, dir, "0::/system.slice/slurmd.service\n")
	applyAndCheck(t, host.NewRoot(dir), []string{"init.scope", "system.slice/cron.service", "user.slice"},
		[]string{"system.slice", "system.slice/slurmstepd.scope", "system.slice/slurmstepd.scope/job_1", user, user + "/app.slice/job_5"})
}
