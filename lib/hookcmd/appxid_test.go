package hookcmd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Application Xids through the real hooks: each job's epilog reads the
// Xid 13 its program made on GPU 0 and names the job in its JSON; after
// the third job, the next prolog on GPU 0 warns that the GPU faults for
// many jobs (XID_APP_JOBS) and the job still runs.
func TestAppXIDsFollowTheGPU(t *testing.T) {
	n := newXIDNode(t)
	for i := 1; i <= 3; i++ {
		if r := n.run("prolog"); r.code != 0 {
			t.Fatalf("prolog of job %d: exit %d %s", 100+n.job, r.code, r.stderr)
		}
		job := fmt.Sprint(100 + n.job)
		n.appendKmsg(fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics SM Warp Exception", i, i*100))
		r := n.run("epilog")
		if r.code != 0 || len(r.Health.XIDs) != 1 || !slices.Equal(r.Health.XIDs[0].Jobs, []string{job}) {
			t.Fatalf("epilog of job %s: exit %d %s, xids %+v: want Xid 13 attributed to job %s", job, r.code, r.stderr, r.Health.XIDs, job)
		}
	}
	r := n.run("prolog")
	if r.code != 0 {
		t.Fatalf("prolog after three faulting jobs: exit %d %s (a warning, not a drain, by default)", r.code, r.stderr)
	}
	var warned string
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "health: XID_APP_JOBS investigate: GPU 0 (0000:18:00.0): application Xids (13) in 3 distinct jobs this boot (jobs 101, 102, 103)") {
			warned = w
		}
	}
	if warned == "" {
		t.Errorf("prolog after three faulting jobs: warnings %q, want XID_APP_JOBS naming jobs 101-103", r.Warnings)
	}
}
