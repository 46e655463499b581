package health

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/config"
)

// runHeld is a run of op with holders (job ids by GPU UUID) as the jobs
// holding the GPUs.
func (n *node) runHeld(op string, holders map[string][]string) *Report {
	n.t.Helper()
	asked := false
	rep, err := Run(context.Background(), Options{Op: op, Root: n.root, GPU: n.b, Health: n.cfg, Spool: n.spool, JobID: "42",
		Holders: func() map[string][]string { asked = true; return holders }})
	must(n.t, err)
	if asked != (len(rep.XIDs) > 0) {
		n.t.Errorf("%s: holders asked %v with %d new Xids: asked only when there are", op, asked, len(rep.XIDs))
	}
	return rep
}

// uuidAt is the UUID of the GPU at bus.
func (n *node) uuidAt(bus string) string {
	n.t.Helper()
	ds, err := n.b.Devices()
	must(n.t, err)
	for _, d := range ds {
		if d.BusID == bus {
			return d.UUID
		}
	}
	n.t.Fatalf("no GPU at %s", bus)
	return ""
}

// The same GPU faulting for three distinct jobs is the GPU's finding,
// XID_APP_JOBS, once the third job's fault is read; one job faulting three
// times, Xid 45 in other jobs, and an Xid no job held the GPU for, are not.
func TestAppXIDsAttributedToJobs(t *testing.T) {
	n := newNode(t)
	const bus = "0000:18:00.0"
	gpu0 := n.uuidAt(bus)
	other := n.uuidAt("0000:2a:00.0")
	seq := 0
	fault := func(code int) string {
		seq++
		return fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): %d, pid=7, name=a.out, fault", seq, seq*100, code)
	}
	epilogOf := func(job string, codes ...int) *Report {
		t.Helper()
		var lines []string
		for _, c := range codes {
			lines = append(lines, fault(c))
		}
		n.appendKmsg(lines...)
		// Job "9" shares nothing: it holds another GPU all along.
		return n.runHeld("epilog", map[string][]string{gpu0: {job}, other: {"9"}})
	}

	rep := epilogOf("100", 13, 31, 13)
	for _, x := range rep.XIDs {
		if !slices.Equal(x.Jobs, []string{"100"}) {
			t.Errorf("Xid %d read at job 100's end: jobs %v, want [100]", x.Code, x.Jobs)
		}
	}
	epilogOf("101", 45) // a cancel's teardown: attributed, never counted against the GPU
	n.appendKmsg(fault(31))
	if rep := n.runHeld("health", map[string][]string{other: {"9"}}); len(rep.XIDs) != 1 || rep.XIDs[0].Jobs != nil {
		t.Errorf("an Xid read while no job held its GPU: %+v, want no jobs", rep.XIDs)
	}
	epilogOf("102", 69)
	if r := one(t, n.run("prolog", true), "xid", ""); r.Status != OK {
		t.Fatalf("two jobs' faults on GPU 0: %s %s, want nothing against it yet", r.Status, r.Reason)
	}

	epilogOf("103", 13)
	st, err := LoadState(n.spool)
	must(t, err)
	var jobs []string
	for _, j := range st.AppJobs[bus] {
		jobs = append(jobs, j.Job)
	}
	if !slices.Equal(jobs, []string{"100", "102", "103"}) || st.AppJobs[bus][0].Count != 3 || !slices.Equal(st.AppJobs[bus][0].Codes, []int{13, 31}) {
		t.Errorf("state's application-fault jobs of GPU 0: %+v, want 100 (13, 31: 3 times), 102, 103", st.AppJobs[bus])
	}
	// The prolog of a job on GPU 0, and gpuprep-health, now say it.
	for _, op := range []string{"prolog", "health"} {
		r := one(t, n.run(op, true), "xid", "")
		if r.Status != Fail || r.Severity != config.HealthWarn || r.Code != "XID_APP_JOBS" || r.Action != ClassInvestigate ||
			!strings.Contains(r.Reason, "in 3 distinct jobs this boot (jobs 100, 102, 103)") {
			t.Errorf("%s after the third job: %s %s %s %s %q", op, r.Status, r.Severity, r.Code, r.Action, r.Reason)
		}
	}
	// A site that drains on it; then an admin's clear ends the count.
	n.cfg.AppXIDJobsSeverity = config.HealthFatal
	if rep := n.run("prolog", true); rep.Reason() == "" || !strings.Contains(rep.Reason(), "XID_APP_JOBS investigate") {
		t.Errorf("app_xid_jobs_severity = fatal: drain reason %q", rep.Reason())
	}
	st.ClearAdmin(nil, "root", "GPU swapped", time.Now())
	must(t, st.Save(n.spool))
	if r := one(t, n.run("prolog", true), "xid", ""); r.Status != OK {
		t.Errorf("after gpuprep-health --clear: %s %s", r.Status, r.Reason)
	}
}

// app_xid_jobs = 0 never makes the finding; the epilog never judges it.
func TestAppXIDJobsOffAndEpilog(t *testing.T) {
	n := newNode(t)
	gpu0 := n.uuidAt("0000:18:00.0")
	for i, job := range []string{"1", "2", "3"} {
		n.appendKmsg(fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=a.out, fault", i+1, (i+1)*100))
		rep := n.runHeld("epilog", map[string][]string{gpu0: {job}})
		if r := one(t, rep, "xid", ""); r.Code == "XID_APP_JOBS" {
			t.Errorf("the epilog of job %s judged the GPU's application faults: %s", job, r.Reason)
		}
	}
	n.cfg.AppXIDJobs = 0
	if r := one(t, n.run("prolog", true), "xid", ""); r.Status != OK {
		t.Errorf("app_xid_jobs = 0: %s %s", r.Status, r.Reason)
	}
}

func TestIsAppFault(t *testing.T) {
	for n, want := range map[int]bool{13: true, 31: true, 69: true, 43: false, 45: false, 79: false, 48: false, 999: false} {
		if IsAppFault(n) != want {
			t.Errorf("IsAppFault(%d) = %v, want %v", n, !want, want)
		}
	}
}
