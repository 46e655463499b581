package health

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/gpu"
)

func TestEpilogLeftovers(t *testing.T) {
	n := newNode(t)
	// PID 4242 is the finished job's (job 42), 5151 another job's.
	n.write("/proc/4242/cgroup", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n")
	n.write("/proc/5151/cgroup", "0::/system.slice/slurmstepd.scope/job_421/step_0\n")
	gpumock.SetFaults(n.dev(3), gpumock.Faults{Processes: []int{4242, 5151}})
	gpumock.SetFaults(n.dev(4), gpumock.Faults{Processes: []int{5151}})
	rep := n.run("epilog", false)
	f := rep.Fatal()
	if len(f) != 1 || f[0].Check != "leftover_processes" || f[0].Reason != gpu3+": process 4242 of job 42 still on the GPU after the job" {
		t.Errorf("fatal %+v", f)
	}
	if r := one(t, rep, "leftover_processes", "GPU 4 (0000:9a:00.0)"); r.Status != OK {
		t.Errorf("another job's process: %+v", r)
	}
}

// On Slurm 26.05 the job's cgroup is named by its SLUID
// (SLURM_JOB_SLUID), with no job_<id> anywhere.
func TestEpilogLeftoversSLUID(t *testing.T) {
	n := newNode(t)
	n.write("/proc/4242/cgroup", "0::/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00/step_0/user/task_0\n")
	n.write("/proc/5151/cgroup", "0::/system.slice/gpunode_slurmstepd.scope/s7AAAAAAAAAAAA/step_0\n")
	gpumock.SetFaults(n.dev(3), gpumock.Faults{Processes: []int{4242, 5151}})
	rep, err := Run(t.Context(), Options{Op: "epilog", Root: n.root, GPU: n.b, Health: n.cfg, Spool: n.spool, JobID: "42", JobSLUID: "s6KSM8TX3WZG00"})
	must(t, err)
	f := rep.Fatal()
	if len(f) != 1 || f[0].Reason != gpu3+": process 4242 of job 42 still on the GPU after the job" {
		t.Errorf("fatal %+v, want process 4242 (in the job's SLUID cgroup) only", f)
	}
}

// Without NVML (procfs), the job's processes holding /dev/nvidia<minor>
// open are found through /proc.
func TestEpilogLeftoversProcfs(t *testing.T) {
	n := newNode(t)
	devs := testrootGPUs(t, n)
	n.write("/proc/4242/cgroup", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n")
	must(t, os.MkdirAll(n.root.Path("/proc/4242/fd"), 0o755))
	must(t, os.Symlink(fmt.Sprintf("/dev/nvidia%d", devs[3].Minor), n.root.Path("/proc/4242/fd/7")))
	must(t, os.Symlink("/dev/null", n.root.Path("/proc/4242/fd/0")))
	rep, err := Run(t.Context(), Options{Op: "epilog", Root: n.root, GPU: gpu.OpenProcfs(n.root), Health: n.cfg, JobID: "42"})
	must(t, err)
	f := rep.Fatal()
	if len(f) != 1 || f[0].Reason != gpu3+": process 4242 of job 42 still on the GPU after the job" {
		t.Errorf("fatal %+v", f)
	}
}

func testrootGPUs(t *testing.T, n *node) []gpu.Device {
	devs, err := gpu.OpenProcfs(n.root).Devices()
	must(t, err)
	return devs
}

func TestEpilogExternal(t *testing.T) {
	for _, tc := range []struct {
		argv    []string
		timeout time.Duration
		status  Status
		reason  string
	}{
		{[]string{"/bin/sh", "-c", "echo diag passed"}, time.Second, OK, ""},
		{[]string{"/bin/sh", "-c", "echo line1; echo 'Fail: PCIe'; exit 3"}, time.Second, Fail, `external check "/bin/sh -c echo line1; echo 'Fail: PCIe'; exit 3": exit status 3: Fail: PCIe`},
		{[]string{"/bin/sleep", "10"}, 200 * time.Millisecond, Fail, `external check "/bin/sleep 10" timed out after 200ms`},
	} {
		n := newNode(t)
		n.cfg.ExternalCommand, n.cfg.ExternalTimeout = tc.argv, tc.timeout
		start := time.Now()
		r := one(t, n.run("epilog", false), "external", "node")
		if r.Status != tc.status || r.Reason != tc.reason {
			t.Errorf("%q: %+v", tc.argv, r)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%q took %s", tc.argv, time.Since(start))
		}
		if tc.status == OK && !strings.HasSuffix(r.Value, "diag passed") {
			t.Errorf("value %q", r.Value)
		}
	}
	// Read-only runs never start it.
	n := newNode(t)
	n.cfg.ExternalCommand = []string{"/bin/false"}
	rep, err := Run(t.Context(), Options{Op: "epilog", Root: n.root, GPU: n.b, Health: n.cfg, ReadOnly: true})
	must(t, err)
	if r := one(t, rep, "external", "node"); r.Status != Skip {
		t.Errorf("read-only: %+v", r)
	}
}

// BenchmarkHealthDGXH100 is the prolog's checks on the simulated 8-GPU node
// (mock:dgxh100 over the fixture root), a kernel log of 5,000 records, with
// every expectation configured (NVLinks, InfiniBand rate, driver).
func BenchmarkHealthDGXH100(b *testing.B) { benchHealth(b, true) }

// BenchmarkHealthDGXH100Defaults is the same with the built-in [health]
// (no NVLink or InfiniBand expectations: those facts are not read).
func BenchmarkHealthDGXH100Defaults(b *testing.B) { benchHealth(b, false) }

func benchHealth(b *testing.B, configured bool) {
	n := newNode(b)
	if configured {
		n.cfg.NVLinks, n.cfg.IBRateGbps, n.cfg.DriverMin = -1, 400, "535"
	}
	var sb strings.Builder
	for i := 1; i <= 5000; i++ {
		sb.WriteString("6," + strconv.Itoa(i) + ",1000,-;usb 1-1: new device\n")
	}
	n.appendKmsg(sb.String())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Run(b.Context(), Options{Op: "prolog", Root: n.root, GPU: n.b, Health: n.cfg, Spool: n.spool})
		if err != nil || len(rep.Fatal()) > 0 {
			b.Fatal(err, rep.Fatal())
		}
	}
}
