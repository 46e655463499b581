package vmtest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuprep/test/vmnode"
)

// Node is the package's VM. Without one the test is skipped (or fails with
// CI=true). A failed test gets the VM's diagnostics in its log (node state,
// Slurm and gpuprep log tails, serial console).
func Node(t *testing.T) *vmnode.VM {
	t.Helper()
	if node == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no test node: %v (CI=true)", noNode)
		}
		t.Skipf("no test node: %v", noNode)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test node diagnostics:\n%s", node.Diagnostics(context.Background()))
		}
	})
	return node
}

// Ctx is a context that ends after d or with the test.
func Ctx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// MustRun runs cmd as root in the VM and returns its stdout, failing the
// test on a non-zero exit.
func MustRun(t *testing.T, ctx context.Context, cmd string) string {
	t.Helper()
	out, _, err := node.Run(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// MustRunAs is MustRun as user (runuser, from the user's home folder).
func MustRunAs(t *testing.T, ctx context.Context, user, cmd string) string {
	t.Helper()
	out, _, err := node.RunAs(ctx, user, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// MustRead is a file of the VM, spaces trimmed.
func MustRead(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	out, err := node.ReadFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// Exists says whether path exists in the VM.
func Exists(t *testing.T, ctx context.Context, path string) bool {
	t.Helper()
	ok, err := node.Exists(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// StartSleepJob submits a batch job as user that sleeps seconds (args are
// more sbatch options), waits until it runs on the node (prolog done, the
// script started: vmnode's WaitJobRunning), and returns its id. At the end
// of the test the job is cancelled and its end (epilog included) waited for.
func StartSleepJob(t *testing.T, ctx context.Context, user string, seconds int, args ...string) int {
	t.Helper()
	id, err := node.SbatchSleep(ctx, user, seconds, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if st, err := node.JobState(ctx, id); err == nil && !slices.Contains(vmnode.EndedStates, st) {
			node.Cancel(ctx, id)
		}
		if _, err := node.WaitJobEnd(ctx, id); err != nil {
			t.Logf("job %d: %v", id, err)
		}
	})
	if _, err := node.WaitJobRunning(ctx, id); err != nil {
		t.Fatalf("job %d: %v", id, err)
	}
	return id
}

// MustJobCgroup is the job's cgroup folder in the VM
// (/sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/job_<id>, or
// .../<SLUID> on Slurm 26.05).
func MustJobCgroup(t *testing.T, ctx context.Context, id int) string {
	t.Helper()
	cg, err := node.JobCgroup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// SetConfig writes gpuprep.toml for this test; BaseConfig is put back at the
// end of the test.
func SetConfig(t *testing.T, toml string) {
	t.Helper()
	ctx := Ctx(t, time.Minute)
	if err := node.WriteConfig(ctx, toml); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := node.WriteConfig(ctx, BaseConfig); err != nil {
			t.Errorf("putting BaseConfig back: %v", err)
		}
	})
}

// NodeLeftIdle checks that the jobs' end left the node to run the next job:
// idle within a minute, or "mixed" with no job left, which slurmctld 22.05
// shows for minutes after an epilog (it keeps the job's CPUs allocated by
// itself; see TestIsolationSurvivesCrashes/reboot), never drained or down.
func NodeLeftIdle(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	idleCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, reason, err := node.WaitNodeState(idleCtx, "idle")
	if err == nil {
		return
	}
	// Read it once more outside the minute: the last probe may have been
	// cut short by that deadline.
	if now, why, err := node.NodeState(ctx); err == nil {
		st, reason = now, why
	}
	if st == "idle" {
		return
	}
	jobs, _, _ := node.Run(ctx, "squeue -h")
	// sinfo's %E prints "none" for no reason.
	if st == "mixed" && (reason == "" || reason == "none") && strings.TrimSpace(jobs) == "" {
		t.Logf("node mixed with no job left %s: slurmctld's stale allocation, not a drain", when)
		return
	}
	t.Errorf("node %s (%s) %s, want idle; jobs: %q", st, reason, when, jobs)
}
