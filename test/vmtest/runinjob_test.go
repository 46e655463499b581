package vmtest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrologRunInJob: with PrologFlags=RunInJob (Slurm 23.11 and later)
// slurmd runs the prolog and epilog inside the job's extern step, in the
// job's own cgroup, confined to its CPUs. gpuprep still does its whole
// job there: the prolog confines the host's services and records the job,
// the epilog frees them and removes the record, and the node goes back to
// idle. On an older Slurm (the bookworm VM's 22.05) the flag does not exist
// and the test says so and skips.
func TestPrologRunInJob(t *testing.T) {
	vm := Node(t)
	ctx := Ctx(t, 12*time.Minute)
	major, minor, err := vm.SlurmVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if major < 23 || (major == 23 && minor < 11) {
		t.Skipf("PrologFlags=RunInJob exists from Slurm 23.11; this VM runs %d.%02d", major, minor)
	}
	setFlags := func(ctx context.Context, flags string) error {
		_, _, err := vm.Run(ctx, "sed -i 's/^PrologFlags=.*/PrologFlags="+flags+"/' /etc/slurm/slurm.conf && systemctl restart slurmctld slurmd")
		if err == nil {
			_, _, err = vm.WaitNodeState(ctx, "idle")
		}
		return err
	}
	if err := setFlags(ctx, "Contain,RunInJob"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := setFlags(ctx, "Contain"); err != nil {
			t.Errorf("putting PrologFlags=Contain back: %v", err)
		}
	})
	if conf := MustRun(t, ctx, "scontrol show config | grep ^PrologFlags"); !strings.Contains(conf, "RunInJob") {
		t.Fatalf("slurmctld did not take PrologFlags=RunInJob: %q", conf)
	}

	SetConfig(t, hkConfig)
	addUnit(t, ctx, "hog.service", hogUnit, true)
	free(t, ctx, "hog.service", "before the job")

	id := StartSleepJob(t, ctx, "alice", 600, "-c2")
	confinedTo(t, ctx, "hog.service", hkCPUs, "job running, prolog run in the job")
	record := "/var/lib/gpuprep/job-" + strconv.Itoa(id) + ".json"
	if !Exists(t, ctx, record) {
		t.Errorf("gpuprep's prolog (run in the job) left no %s", record)
	}
	if j := MustRun(t, ctx, "journalctl -q -t gpuprep-prolog --no-pager | tail -n 5"); !strings.Contains(j, "prolog done") {
		t.Errorf("no 'prolog done' in the prolog's log:\n%s", j)
	}

	if err := vm.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.WaitJobEnd(ctx, id); err != nil {
		t.Fatal(err)
	}
	free(t, ctx, "hog.service", "after the epilog, run in the job")
	if _, err := vm.WaitUntil(ctx, 500*time.Millisecond, "! test -e "+record); err != nil {
		t.Errorf("the epilog (run in the job) left %s: %v", record, err)
	}
	if st, reason, err := vm.WaitNodeState(Ctx(t, time.Minute), "idle"); err != nil {
		t.Errorf("node %s (%s) after the job: %v", st, reason, err)
	}
}
