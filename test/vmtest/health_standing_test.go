package vmtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gpuprep/test/vmnode"
)

// The VM has no GPU, and no user-space write to /dev/kmsg makes a record of
// the kernel facility, which is all gpuprep reads Xids from. So slurmd's
// HealthCheckProgram here is a wrapper that runs the installed
// gpuprep-health on a small fixture root in the VM (--root): one GPU in
// /proc/driver/nvidia/gpus (procfs backend) and a dev/kmsg file holding a
// kernel-facility driver line for it; its spool and log are the test's.
// Everything else is real: slurmd runs it with SLURMD_NODENAME, it asks
// slurmctld for the node's state and drains or resumes it with the
// installed scontrol, and the first drain fails because slurmctld is not
// there to take it (stopped for one run, as when it is too busy to answer).
const (
	hcDir     = "/var/tmp/gpuprep-hc"
	hcRoot    = hcDir + "/root"
	hcWrapper = hcDir + "/health.sh"
	hcRuns    = hcDir + "/runs"
	hcLog     = hcDir + "/health.log"
	hcFlags   = "--root " + hcRoot + " --gpu-backend procfs --config " + hcDir + "/gpuprep.toml --state-dir " + hcDir + "/spool"
	// hcConf is what the test adds to slurm.conf (and takes out again).
	hcConf = "HealthCheckProgram=" + hcWrapper + "\nHealthCheckInterval=5\nHealthCheckNodeState=ANY\n"
	// hcXid is the driver's line of GPU 0000:18:00.0 falling off the bus.
	hcXid = "NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus."
)

// TestStandingXidDrainsUntilCleared: gpuprep-health as slurmd's
// HealthCheckProgram on a real Slurm node. A fatal Xid whose one drain
// failed (slurmctld stopped) drains the node at the next run slurmd makes;
// an admin who resumes the node without clearing sees it drained again;
// gpuprep-health --clear (who, why) ends the standing Xid, the next run
// resumes the node gpuprep drained, and a job runs.
func TestStandingXidDrainsUntilCleared(t *testing.T) {
	vm := Node(t)
	ctx := Ctx(t, 12*time.Minute)
	setUpHealthCheck(t, ctx, vm)
	hcWaitRuns(t, ctx, vm, 1)
	if st, reason := mustNodeState(t, ctx); st != "idle" {
		t.Fatalf("healthy fixture: node %s (%s), want idle\n%s", st, reason, hcLogTail(ctx, vm))
	}

	// The Xid comes while slurmctld cannot answer: the run slurmd would
	// make (run here as slurmd runs it) fails to drain and says it retries.
	MustRun(t, ctx, "printf '4,1,5000000,-;%s\\n' '"+hcXid+"' >> "+hcRoot+"/dev/kmsg")
	MustRun(t, ctx, "systemctl stop slurmctld")
	out, _, err := vm.Run(ctx, "SLURMD_NODENAME="+vmnode.NodeName+" "+hcWrapper+"; echo exit=$?")
	MustRun(t, ctx, "systemctl start slurmctld")
	if err != nil || !strings.Contains(out, "exit=1") {
		t.Fatalf("run with slurmctld stopped: %v\n%s", err, out)
	}
	if log := MustRun(t, ctx, "cat "+hcLog); !strings.Contains(log, "scontrol could not drain the node; the next run retries") {
		t.Errorf("the log does not say the drain is retried:\n%s", log)
	}
	if _, _, err := vm.WaitNodeState(ctx, "idle", "drained"); err != nil {
		t.Fatal(err)
	}

	// slurmd's next run drains the node: the Xid stands, it is not new.
	const want = "gpuprep: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 not cleared"
	hcWaitDrained(t, ctx, vm, want)

	// An admin resumes it without clearing: the next run drains it again.
	if err := vm.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	hcWaitRuns(t, ctx, vm, 1)
	hcWaitDrained(t, ctx, vm, want)

	// The admin clears GPU 0 (a GPU reset by hand): recorded, and the next
	// run resumes the node gpuprep drained.
	out = MustRun(t, ctx, "SUDO_USER=oncall /usr/local/sbin/gpuprep-health "+hcFlags+" --clear 0 --reason 'GPU 0 reset by hand, ticket 4711'")
	if !strings.Contains(out, "cleared GPU 0 (0000:18:00.0): Xid 79 (by oncall: GPU 0 reset by hand, ticket 4711)") {
		t.Errorf("--clear printed:\n%s", out)
	}
	if _, reason, err := vm.WaitNodeState(ctx, "idle"); err != nil {
		t.Fatalf("not resumed after --clear (%s): %v\n%s", reason, err, hcLogTail(ctx, vm))
	}
	state := MustRun(t, ctx, "cat "+hcDir+"/spool/health.json")
	if !strings.Contains(state, `"by": "oncall"`) || !strings.Contains(state, "ticket 4711") || strings.Contains(state, `"xid_history"`) {
		t.Errorf("health.json after --clear:\n%s", state)
	}
	if log := MustRun(t, ctx, "cat "+hcLog); !strings.Contains(log, "Xid history cleared by an admin") || !strings.Contains(log, "by=oncall") {
		t.Errorf("the log does not record the clear:\n%s", log)
	}
	hcWaitRuns(t, ctx, vm, 2)
	if st, reason := mustNodeState(t, ctx); st != "idle" {
		t.Errorf("after the clear: node %s (%s), want idle", st, reason)
	}
	shortJob(t, ctx)
}

// setUpHealthCheck writes the fixture root, the config and the wrapper in
// the VM, and makes the wrapper slurmd's HealthCheckProgram (every 5 s);
// at the end slurm.conf is put back, the node resumed and the files gone.
func setUpHealthCheck(t *testing.T, ctx context.Context, vm *vmnode.VM) {
	t.Helper()
	info := "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-1e0d1697-fb12-2a4f-76c6-69699b1022c5\nBus Location: \t 0000:18:00.0\nDevice Minor: \t 0\n"
	files := map[string]string{
		hcRoot + "/proc/sys/kernel/random/boot_id":                   "11111111-2222-3333-4444-555555555555\n",
		hcRoot + "/proc/driver/nvidia/gpus/0000:18:00.0/information": info,
		hcRoot + "/dev/kmsg":    "6,0,0,-;Linux version 6.1.0\n",
		hcDir + "/gpuprep.toml": fmt.Sprintf("[general]\nlog_file = %q\nmetrics_dir = \"\"\n", hcLog),
		hcWrapper:               "#!/bin/sh\necho run >> " + hcRuns + "\nexec /usr/local/sbin/gpuprep-health " + hcFlags + "\n",
	}
	MustRun(t, ctx, "rm -rf "+hcDir+" && mkdir -p "+hcRoot+"/dev "+hcRoot+"/proc/sys/kernel/random '"+hcRoot+"/proc/driver/nvidia/gpus/0000:18:00.0'")
	for p, s := range files {
		mode := os.FileMode(0o644)
		if p == hcWrapper {
			mode = 0o755
		}
		if err := vm.WriteFile(ctx, p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	MustRun(t, ctx, "cp /etc/slurm/slurm.conf "+hcDir+"/slurm.conf.orig && printf '\\n"+strings.ReplaceAll(hcConf, "\n", "\\n")+"' >> /etc/slurm/slurm.conf && scontrol reconfigure")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, _, err := vm.Run(ctx, "cp "+hcDir+"/slurm.conf.orig /etc/slurm/slurm.conf && scontrol reconfigure"); err != nil {
			t.Errorf("putting slurm.conf back: %v", err)
		}
		if st, _, _ := vm.NodeState(ctx); st != "idle" {
			vm.Resume(ctx)
			vm.WaitNodeState(ctx, "idle")
		}
		vm.Run(ctx, "rm -rf "+hcDir)
	})
}

// hcRunCount is how many times the wrapper ran.
func hcRunCount(ctx context.Context, vm *vmnode.VM) int {
	out, _, _ := vm.Run(ctx, "cat "+hcRuns+" 2>/dev/null")
	return strings.Count(out, "run\n")
}

// hcWaitRuns waits for n more complete runs of the wrapper (complete: the
// next has started), up to 90 s.
func hcWaitRuns(t *testing.T, ctx context.Context, vm *vmnode.VM, n int) {
	t.Helper()
	want := hcRunCount(ctx, vm) + n + 1
	for end := time.Now().Add(90 * time.Second); hcRunCount(ctx, vm) < want; time.Sleep(time.Second) {
		if time.Now().After(end) {
			t.Fatalf("slurmd ran the health check %d times, want %d\n%s", hcRunCount(ctx, vm), want, hcLogTail(ctx, vm))
		}
	}
}

// hcWaitDrained waits up to 90 s for the node to be drained with a reason
// that starts with want.
func hcWaitDrained(t *testing.T, ctx context.Context, vm *vmnode.VM, want string) {
	t.Helper()
	var st, reason string
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		st, reason = mustNodeState(t, ctx)
		if (st == "drained" || st == "draining") && strings.HasPrefix(reason, want) {
			return
		}
	}
	t.Fatalf("node %s (%q), want drained with %q\n%s", st, reason, want, hcLogTail(ctx, vm))
}

func mustNodeState(t *testing.T, ctx context.Context) (string, string) {
	t.Helper()
	st, reason, err := node.NodeState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, reason
}

// hcLogTail is the end of gpuprep-health's log in the VM, for a failure.
func hcLogTail(ctx context.Context, vm *vmnode.VM) string {
	out, _, _ := vm.Run(ctx, "tail -n 30 "+hcLog)
	return "gpuprep-health's log:\n" + out
}
