package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
)

// hkCPUs is the housekeeping CPUs of {cores_per_numa = 1} on dgxh100.
const hkCPUs = "0,56,112,168"

// hkEnv is a dgxh100 node whose services (cron, user.slice, init.scope)
// have no cpuset of their own, with job 1's cgroup and slurmd, and a
// profile that confines the services.
func hkEnv(t *testing.T) (*env, func(cg string) string) {
	t.Helper()
	e := newRecoveryEnv(t)
	cfg, err := config.Parse("test.toml", []byte(`
[general]
dead_job_grace = "0s"
[profiles.default]
housekeeping_cpus = {cores_per_numa = 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	addUnits(t, e.root, "system.slice/cron.service", "system.slice/slurmd.service",
		"system.slice/slurmstepd.scope/job_1", "system.slice/slurmstepd.scope/job_2", "user.slice", "init.scope")
	e.write("sys/fs/cgroup/system.slice/slurmstepd.scope/job_1/cpuset.cpus", "4-7")
	return e, func(cg string) string { return e.read("sys/fs/cgroup/" + cg + "/cpuset.cpus") }
}

// startUnit starts a service as systemd does for one with AllowedCPUs=.
func startUnit(e *env, cg, cpus string) {
	addUnits(e.t, e.root, cg)
	e.write(filepath.Join("sys/fs/cgroup", cg, "cpuset.cpus"), cpus)
}

func wantServices(t *testing.T, cpus func(string) string, what string, want map[string]string) {
	t.Helper()
	for cg, w := range want {
		if got := cpus(cg); got != w {
			t.Errorf("%s: %s = %q, want %q", what, cg, got, w)
		}
	}
}

// The case: every service had no cpuset of its own at baseline; a
// service started during the job with its own AllowedCPUs= (100-110) is
// recorded as drift, and the epilog of the last job puts the others back
// and leaves it at its own CPUs.
func TestEpilogLeavesUnitStartedDuringJob(t *testing.T) {
	e, cpus := hkEnv(t)
	e.prolog(1, nil, "")
	wantServices(t, cpus, "during the job", map[string]string{"system.slice/cron.service": hkCPUs, "user.slice": hkCPUs})
	var node NodeFile
	if _, err := e.spool.ReadJSON(nodeFile, &node); err != nil {
		t.Fatal(err)
	}
	if b := node.Baseline["housekeeping_cpus@node"]; !strings.Contains(string(b), "system.slice/cron.service=;") {
		t.Errorf("baseline %q, want each confined cgroup named", b)
	}
	startUnit(e, "system.slice/backup.service", "100-110")
	ep := e.epilog(1)
	drift := false
	for _, d := range ep.Drift {
		drift = drift || d.ID.Name == "housekeeping_cpus" && strings.Contains(string(d.Found), "system.slice/backup.service=100-110")
	}
	if !drift {
		t.Errorf("epilog drift %+v, want housekeeping_cpus naming backup.service=100-110", ep.Drift)
	}
	wantServices(t, cpus, "after the epilog", map[string]string{
		"system.slice/backup.service": "100-110",
		"system.slice/cron.service":   "", "user.slice": "", "init.scope": "",
		"system.slice/slurmstepd.scope/job_1": "4-7",
	})
}

// A unit started during job 1 is confined by job 2's prolog; the epilog of
// the last job puts it back to its own CPUs, not to what the services held
// before job 1.
func TestLaterPrologAddsUnitToBaseline(t *testing.T) {
	e, cpus := hkEnv(t)
	e.prolog(1, nil, "")
	startUnit(e, "system.slice/backup.service", "100-110")
	e.prolog(2, nil, "")
	wantServices(t, cpus, "during job 2", map[string]string{"system.slice/backup.service": hkCPUs})
	e.epilog(1)
	wantServices(t, cpus, "after job 1", map[string]string{"system.slice/backup.service": hkCPUs, "system.slice/cron.service": hkCPUs})
	e.epilog(2)
	wantServices(t, cpus, "after the last job", map[string]string{"system.slice/backup.service": "100-110", "system.slice/cron.service": "", "user.slice": ""})
}

// A killed prolog is rolled back by the next hook: the cgroups it confined
// get their CPUs back, and a unit started since is left alone.
func TestRollbackLeavesUnitStartedSince(t *testing.T) {
	e, cpus := hkEnv(t)
	e.killedProlog(1, nil, "")
	startUnit(e, "system.slice/backup.service", "100-110")
	if _, err := Epilog(context.Background(), e.opts(9, nil, "")); err != nil {
		t.Fatal(err)
	}
	wantServices(t, cpus, "after the roll back", map[string]string{
		"system.slice/backup.service": "100-110",
		"system.slice/cron.service":   "", "user.slice": "", "init.scope": "",
	})
}

// An older gpuprep recorded the baseline as one list for every cgroup
// ("": none had a cpuset of its own). Its restore writes it only to the
// cgroups that hold the housekeeping CPUs: a unit started during the job
// with its own keeps them.
func TestOldUniformBaselineRestoresConfinedOnly(t *testing.T) {
	e, cpus := hkEnv(t)
	e.prolog(1, nil, "")
	key := knob.ID{Name: "housekeeping_cpus", Scope: knob.NodeScope}.String()
	var node NodeFile
	if _, err := e.spool.ReadJSON(nodeFile, &node); err != nil {
		t.Fatal(err)
	}
	recs, err := readJobRecords(e.spool)
	if err != nil {
		t.Fatal(err)
	}
	node.Baseline[key], recs["1"].Baseline[key] = "", ""
	if err := e.spool.WriteJSON(nodeFile, node); err != nil {
		t.Fatal(err)
	}
	if err := e.spool.WriteJSON(jobFile("1"), recs["1"]); err != nil {
		t.Fatal(err)
	}
	startUnit(e, "system.slice/backup.service", "100-110")
	ep := e.epilog(1)
	wantServices(t, cpus, "after the epilog", map[string]string{
		"system.slice/backup.service": "100-110",
		"system.slice/cron.service":   "", "user.slice": "", "init.scope": "",
	})
	var restore *plan.Change
	for i, c := range ep.Changes {
		if c.ID.String() == key {
			restore = &ep.Changes[i]
		}
	}
	if restore == nil || strings.Contains(string(restore.To), "backup") {
		t.Errorf("restore %+v, want one naming the confined cgroups only", restore)
	}
}

// After a reboot the services are back as the per-cgroup baseline says
// (no cpuset of their own): the reboot report names no housekeeping_cpus
// difference, although the baseline's text ("cron.service=;...") is not
// what a read gives (""). A unit that does differ is still named.
func TestRebootReportComparesHousekeepingPerCgroup(t *testing.T) {
	e, _ := hkEnv(t)
	e.write("proc/sys/kernel/random/boot_id", bootA+"\n")
	e.prolog(1, nil, "")
	// Reboot: every service starts afresh, with no cpuset of its own.
	e.write("proc/sys/kernel/random/boot_id", bootB+"\n")
	for _, cg := range []string{"system.slice/cron.service", "user.slice", "init.scope"} {
		e.write(filepath.Join("sys/fs/cgroup", cg, "cpuset.cpus"), "")
	}
	e.prolog(2, nil, "")
	var n NodeFile
	if _, err := e.spool.ReadJSON(nodeFile, &n); err != nil {
		t.Fatal(err)
	}
	if len(n.History) != 1 {
		t.Fatalf("history %+v, want the old boot", n.History)
	}
	for _, d := range n.History[0].Differences {
		if strings.HasPrefix(d, "housekeeping_cpus") {
			t.Errorf("reboot report %q: the services hold their baseline", d)
		}
	}
	if !strings.Contains(string(n.History[0].Baseline["housekeeping_cpus@node"]), "=") {
		t.Fatalf("baseline %q is not per cgroup: the test no longer tests the per-cgroup form", n.History[0].Baseline["housekeeping_cpus@node"])
	}

	// One boot later a service comes up with CPUs of its own: that is a difference.
	e.write("proc/sys/kernel/random/boot_id", bootA+"\n")
	e.write("sys/fs/cgroup/system.slice/cron.service/cpuset.cpus", "8-11")
	e.prolog(3, nil, "")
	if _, err := e.spool.ReadJSON(nodeFile, &n); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range n.History[len(n.History)-1].Differences {
		found = found || strings.HasPrefix(d, "housekeeping_cpus")
	}
	if !found {
		t.Errorf("reboot report %q: cron.service holds 8-11, not its baseline", n.History[len(n.History)-1].Differences)
	}
}

// node.json lost while two jobs run, the second having confined a unit
// started during the first: the baseline rebuilt from the job records
// names that unit too (each record holds the baseline as its prolog left
// it), so the last epilog gives it its own CPUs back.
func TestRebuiltBaselineKeepsUnitsLaterJobsConfined(t *testing.T) {
	e, cpus := hkEnv(t)
	e.prolog(1, nil, "")
	startUnit(e, "system.slice/backup.service", "100-110")
	e.prolog(2, nil, "")
	if err := os.Remove(filepath.Join(e.spool.Dir(), nodeFile)); err != nil {
		t.Fatal(err)
	}
	e.epilog(1)
	e.epilog(2)
	wantServices(t, cpus, "after the last job", map[string]string{
		"system.slice/backup.service": "100-110",
		"system.slice/cron.service":   "", "user.slice": "", "init.scope": "",
	})
}
