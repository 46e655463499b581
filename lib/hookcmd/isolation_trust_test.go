package hookcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/hooktest"
)

// Issue 30, items 6 and 7, through the prolog a site runs: nothing a job's
// user can do in /proc or in their own delegated cgroups
// (user.slice/user-<uid>.slice/user@<uid>.service, which systemd hands to
// the user) switches host-service isolation off, or passes for Slurm's
// cgroups.

// trustHK is housekeeping_cpus = {cores_per_numa = 1} on dgxh100.
const trustHK = "0,56,112,168"

// trustUserSubtree is the cgroup systemd delegates to uid 1000.
const trustUserSubtree = "user.slice/user-1000.slice/user@1000.service"

// trustNode is a DGX H100 fixture root with a cgroup v2 tree systemd and
// Slurm's cgroup/v2 plugin would make (slurmd in system.slice/slurmd.service,
// as the fixture's slurmd process says), isolation on in the default
// profile, and a dead-job grace of 0 so that a prolog looks at every
// other job's liveness.
type trustNode struct {
	t                *testing.T
	root, cfg, spool string
}

// trustRun is what a test reads of a prolog's --json outcome.
type trustRun struct {
	code    int
	stderr  string
	Changes []struct {
		ID struct{ Knob string } `json:"id"`
		To string                `json:"to"`
	} `json:"changes"`
	Skipped []struct {
		ID     struct{ Knob string } `json:"id"`
		Reason string                `json:"reason"`
	} `json:"skipped"`
	Released []struct{ Job, Kind, Reason string } `json:"released"`
}

func newTrustNode(t *testing.T, cgroups ...string) *trustNode {
	t.Helper()
	root, cfg, spool := hooktest.HealthRoot(t, "dead_job_grace = \"0s\"\n[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 1}\n")
	n := &trustNode{t: t, root: root, cfg: cfg, spool: spool}
	n.cgroups(cgroups...)
	return n
}

// cgroups makes cgroup v2 folders with the files isolation reads.
func (n *trustNode) cgroups(cgs ...string) {
	n.t.Helper()
	for _, cg := range cgs {
		dir := filepath.Join(n.root, "sys/fs/cgroup", cg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			n.t.Fatal(err)
		}
		for f, c := range map[string]string{"cgroup.controllers": "cpuset cpu memory pids", "cpuset.cpus": "", "cgroup.procs": ""} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
				n.t.Fatal(err)
			}
		}
	}
}

// delegate gives the subtree of cg to uid as systemd's delegation does
// (chown of the unit's folder; what the user makes below is the user's).
// Only root can; elsewhere the folders stay the test's own, which the
// checks below do not depend on.
func (n *trustNode) delegate(cg string, uid int) {
	n.t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	top := filepath.Join(n.root, "sys/fs/cgroup", cg)
	if err := filepath.Walk(top, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		n.t.Fatal(err)
	}
}

// cpus reads a cgroup's cpuset.cpus.
func (n *trustNode) cpus(cg string) string {
	b, _ := os.ReadFile(filepath.Join(n.root, "sys/fs/cgroup", cg, "cpuset.cpus"))
	return strings.TrimSpace(string(b))
}

// prolog runs the prolog of job (on GPU gpu) with --json.
func (n *trustNode) prolog(job, gpu int) trustRun {
	n.t.Helper()
	env := map[string]string{"SLURM_JOB_ID": strconv.Itoa(job), "SLURM_JOB_USER": "mallory", "SLURM_JOB_GPUS": strconv.Itoa(gpu),
		"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	code, out, stderr := mainRun("prolog", env, "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool, "--json")
	r := trustRun{code: code, stderr: stderr}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		n.t.Fatalf("prolog %d: exit %d, %v\n%s\n%s", job, code, err, out, stderr)
	}
	if code != 0 {
		n.t.Fatalf("prolog %d: exit %d: %s", job, code, stderr)
	}
	return r
}

// confined says whether the run confined host services to the
// housekeeping CPUs; why is the skip reason when it did not.
func (r trustRun) confined() (ok bool, why string) {
	for _, c := range r.Changes {
		if c.ID.Knob == "housekeeping_cpus" {
			return c.To == trustHK, "changed to " + c.To
		}
	}
	for _, s := range r.Skipped {
		if s.ID.Knob == "housekeeping_cpus" {
			return false, "skipped: " + s.Reason
		}
	}
	return false, "not planned"
}

// released says whether the run released job.
func (r trustRun) released(job int) bool {
	for _, x := range r.Released {
		if x.Job == strconv.Itoa(job) {
			return true
		}
	}
	return false
}

// trustSlurmCgroups is the cgroups of a node whose Slurm uses cgroup/v2, with job
// 1 running, and a user's delegated subtree.
var trustSlurmCgroups = []string{"system.slice/cron.service", "system.slice/slurmd.service", "system.slice/slurmstepd.scope/job_1",
	trustUserSubtree + "/app.slice", "user.slice/user-1000.slice/session-3.scope", "init.scope"}

// A process of the user named slurmd whose /proc/<pid>/exe cannot be read
// (a path longer than PATH_MAX gives ENAMETOOLONG; here exe is no link,
// EINVAL, as a kernel thread's or any unreadable one) is the user's, not
// Slurm's: the prolog still confines the host services.
func TestUserSlurmdWithUnreadableExeKeepsIsolation(t *testing.T) {
	n := newTrustNode(t, trustSlurmCgroups...)
	n.delegate(trustUserSubtree, 1000)
	proc := filepath.Join(n.root, "proc/7000")
	for f, c := range map[string]string{
		"exe": "", "comm": "slurmd\n", "cmdline": "slurmd\x00",
		"status": "Name:\tslurmd\nUid:\t1000\t1000\t1000\t1000\n",
		"cgroup": "0::/" + trustUserSubtree + "/app.slice\n",
	} {
		if err := os.MkdirAll(proc, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := n.prolog(101, 0)
	if ok, why := r.confined(); !ok {
		t.Fatalf("a user's process named slurmd switched isolation off: housekeeping_cpus %s", why)
	}
	for cg, want := range map[string]string{"system.slice/cron.service": trustHK, "user.slice": trustHK, "init.scope": trustHK,
		"system.slice/slurmd.service": "", "system.slice/slurmstepd.scope/job_1": ""} {
		if got := n.cpus(cg); got != want {
			t.Errorf("%s = %q, want %q", cg, got, want)
		}
	}
}

// A user's delegated subtree as deep or as large as the user likes (30
// levels; 25,000 cgroups) is never walked: the prolog still confines the
// host services.
func TestUserCgroupTreeKeepsIsolation(t *testing.T) {
	for name, mk := range map[string]func(n *trustNode){
		"30 levels": func(n *trustNode) {
			n.cgroups(trustUserSubtree + "/app.slice" + strings.Repeat("/d", 30))
		},
		"25000 cgroups": func(n *trustNode) {
			for i := range 25000 {
				if err := os.Mkdir(filepath.Join(n.root, "sys/fs/cgroup", trustUserSubtree, "app.slice", fmt.Sprintf("c%d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			n := newTrustNode(t, trustSlurmCgroups...)
			mk(n)
			n.delegate(trustUserSubtree, 1000)
			r := n.prolog(101, 0)
			if ok, why := r.confined(); !ok {
				t.Fatalf("the user's cgroup tree switched isolation off: housekeeping_cpus %s", why)
			}
			if got := n.cpus("user.slice"); got != trustHK {
				t.Errorf("user.slice = %q, want %q", got, trustHK)
			}
		})
	}
}

// The cgroups a user names like Slurm's in their own subtree (job_5,
// x-slurmstepd.scope and a job in it) are the user's: user.slice is
// confined as a whole, as on any node, and nothing inside the user's
// subtree is written or kept off the housekeeping CPUs.
func TestUserNamedSlurmCgroupsConfined(t *testing.T) {
	n := newTrustNode(t, trustSlurmCgroups...)
	fake := []string{trustUserSubtree + "/app.slice/job_5", trustUserSubtree + "/x-slurmstepd.scope/job_6",
		trustUserSubtree + "/x-slurmstepd.scope/s6KSM8TX3WZG00", trustUserSubtree + "/app.slice/slurmstepd.scope/job_7"}
	n.cgroups(fake...)
	n.delegate(trustUserSubtree, 1000)
	r := n.prolog(101, 0)
	if ok, why := r.confined(); !ok {
		t.Fatalf("housekeeping_cpus %s", why)
	}
	if got := n.cpus("user.slice"); got != trustHK {
		t.Errorf("user.slice = %q, want %q: the user's job_5 kept it out", got, trustHK)
	}
	for _, cg := range append([]string{"user.slice/user-1000.slice", trustUserSubtree, trustUserSubtree + "/app.slice"}, fake...) {
		if got := n.cpus(cg); got != "" {
			t.Errorf("%s written (%q): gpuprep never writes into a user's subtree", cg, got)
		}
	}
}

// On a node whose Slurm uses no cgroups (no slurmstepd scope, no v1
// slurm tree), a job with no cgroup and no slurmstepd may be alive: it is
// never released for that. A user's job_5 or x-slurmstepd.scope in their
// own subtree does not make Slurm's tree look present. Where Slurm's scope
// is there, the same job is released (the check can tell).
func TestUserNamedSlurmCgroupsReleaseNoJob(t *testing.T) {
	base := []string{"system.slice/cron.service", "system.slice/slurmd.service", trustUserSubtree + "/app.slice", "init.scope"}
	t.Run("user-named cgroups", func(t *testing.T) {
		n := newTrustNode(t, base...)
		n.prolog(101, 0)
		n.cgroups(trustUserSubtree+"/app.slice/job_5", trustUserSubtree+"/x-slurmstepd.scope/job_6")
		n.delegate(trustUserSubtree, 1000)
		if r := n.prolog(102, 1); r.released(101) {
			t.Errorf("live job 101 released because of the user's cgroups: %+v", r.Released)
		}
	})
	t.Run("Slurm's scope", func(t *testing.T) {
		n := newTrustNode(t, base...)
		n.prolog(101, 0)
		n.cgroups("system.slice/slurmstepd.scope/job_102")
		if r := n.prolog(102, 1); !r.released(101) {
			t.Errorf("job 101, with no cgroup in Slurm's scope and no slurmstepd, not released: %+v", r.Released)
		}
	})
}
