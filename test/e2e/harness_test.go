package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/test/slurmharness"
)

// TestHarnessJobs: the plain node runs srun and sbatch jobs; also records the
// cluster's cold start and stop times.
func TestHarnessJobs(t *testing.T) {
	t.Parallel()
	c := slurmharness.Start(t, slurmharness.Options{})

	c.MustSrun("-n1", "true")
	if out := strings.TrimSpace(c.MustSrun("hostname")); out != c.Node {
		t.Errorf("srun hostname = %q, want %q", out, c.Node)
	}
	// SLURM_LOCALID (not SLURM_LOCAL_ID) and friends reach tasks.
	out := c.MustSrun("-n1", "sh", "-c", `echo "$SLURM_PROCID $SLURM_LOCALID $SLURM_NTASKS $SLURM_CONF"`)
	if got, want := strings.TrimSpace(out), "0 0 1 "+c.Conf; got != want {
		t.Errorf("task env = %q, want %q", got, want)
	}

	id := c.Sbatch("echo batch-ok\n")
	if st := c.WaitJob(id, 30*time.Second); st != "COMPLETED" {
		t.Fatalf("batch job %d: %s\n%s", id, st, c.LogTails(20))
	}
	if got := strings.TrimSpace(c.JobOutput(id)); got != "batch-ok" {
		t.Errorf("batch output = %q", got)
	}

	// Latency of a trivial job, as users feel it.
	var ds []time.Duration
	for range 5 {
		t0 := time.Now()
		c.MustSrun("-n1", "true")
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	t.Logf("timing: srun -n1 true median %v (min %v, max %v)", ds[len(ds)/2].Round(time.Millisecond), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))

	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	t.Logf("timing: cold start %v, stop %v", c.StartTime.Round(time.Millisecond), c.StopTime.Round(time.Millisecond))
	for name, pid := range c.PIDs() {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) still runs after Stop", name, pid)
		}
	}
}

// detectedCores is the number of cores `slurmd -C` reported (Slurm core ids
// 0..n-1 for gres.conf Cores=).
func detectedCores(t *testing.T, c *slurmharness.Cluster) int {
	t.Helper()
	f := map[string]int{}
	for _, tok := range strings.Fields(c.Detected) {
		k, v, _ := strings.Cut(tok, "=")
		if n, err := strconv.Atoi(v); err == nil {
			f[k] = n
		}
	}
	n := f["SocketsPerBoard"] * max(f["Boards"], 1) * f["CoresPerSocket"]
	if n == 0 {
		t.Fatalf("cannot read cores from %q", c.Detected)
	}
	return n
}

func coreRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// TestHarnessGres: a hand-written gres.conf of 4 GPUs (mknod devices, Cores
// split over the real cores, NVLink counts) is what slurmd -G reports, and a
// job asking for two GPUs gets two.
func TestHarnessGres(t *testing.T) {
	t.Parallel()
	devDir := t.TempDir()
	devs := slurmharness.MakeDevices(t, devDir, []int{0, 1, 2, 3})
	links := [][]int{
		{-1, 4, 2, 2},
		{4, -1, 2, 2},
		{2, 2, -1, 4},
		{2, 2, 4, -1},
	}
	gres := func(ncores int) (string, []string) {
		half := max(ncores/2, 1)
		cores := []string{coreRange(0, half-1), coreRange(0, half-1), coreRange(min(half, ncores-1), ncores-1), coreRange(min(half, ncores-1), ncores-1)}
		var b strings.Builder
		b.WriteString("# hand-written by TestHarnessGres\nAutoDetect=off\n")
		for i, d := range devs {
			var l []string
			for _, n := range links[i] {
				l = append(l, strconv.Itoa(n))
			}
			fmt.Fprintf(&b, "Name=gpu File=%s Cores=%s Links=%s\n", d, cores[i], strings.Join(l, ","))
		}
		return b.String(), cores
	}
	// Cores= are Slurm core ids 0..n-1 of the detected node (no
	// config_overrides here), so split the real cores.
	ncores := hostCores(t)
	text, cores := gres(ncores)
	c := slurmharness.Start(t, slurmharness.Options{Gres: "gpu:4", GresConf: text})
	if got := detectedCores(t, c); got != ncores {
		t.Fatalf("cores: slurmd -C says %d, sysfs %d", got, ncores)
	}

	out, err := c.SlurmdG()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gs, err := slurmharness.ParseSlurmdG(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 4 {
		t.Fatalf("slurmd -G: %d GRES lines, want 4:\n%s", len(gs), out)
	}
	for i, g := range gs {
		var l []string
		for _, n := range links[i] {
			l = append(l, strconv.Itoa(n))
		}
		if g.Name != "gpu" || g.Count != 1 || g.Index != i || g.File != devs[i] || g.Cores != cores[i] || g.Links != strings.Join(l, ",") || g.CoreCnt != ncores {
			t.Errorf("slurmd -G line %d: %+v; want File=%s Cores=%s Links=%s CoreCnt=%d", i, g, devs[i], cores[i], strings.Join(l, ","), ncores)
		}
	}
	if strings.Contains(out, "error") || strings.Contains(out, "WARNING") {
		t.Errorf("slurmd -G complained:\n%s", out)
	}

	if info, err := c.NodeInfo(); err != nil || !strings.HasPrefix(info["Gres"], "gpu:4") {
		t.Errorf("scontrol show node: Gres=%q (%v)", info["Gres"], err)
	}

	env := map[string]string{}
	for _, l := range strings.Split(c.MustSrun("--gres=gpu:2", "env"), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if ok {
			env[k] = v
		}
	}
	cvd := strings.Split(env["CUDA_VISIBLE_DEVICES"], ",")
	if len(cvd) != 2 || cvd[0] == "" {
		t.Errorf("CUDA_VISIBLE_DEVICES=%q, want two entries", env["CUDA_VISIBLE_DEVICES"])
	}
	for _, k := range []string{"SLURM_STEP_GPUS", "GPU_DEVICE_ORDINAL"} {
		if len(strings.Split(env[k], ",")) != 2 {
			t.Errorf("%s=%q, want two entries", k, env[k])
		}
	}
	if env["SLURM_GPUS_ON_NODE"] != "2" {
		t.Errorf("SLURM_GPUS_ON_NODE=%q, want 2", env["SLURM_GPUS_ON_NODE"])
	}
	if _, ok := env["SLURM_JOB_GPUS"]; ok {
		t.Logf("note: SLURM_JOB_GPUS is in srun tasks here (%s)", env["SLURM_JOB_GPUS"])
	}
}

// hostCores is the number of physical cores of this machine as Slurm counts
// them (distinct package/core pairs of online CPUs).
func hostCores(t *testing.T) int {
	t.Helper()
	cpus, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology/core_id")
	seen := map[string]bool{}
	for _, p := range cpus {
		core, err1 := os.ReadFile(p)
		pkg, err2 := os.ReadFile(filepath.Join(filepath.Dir(p), "physical_package_id"))
		if err1 != nil || err2 != nil {
			continue
		}
		seen[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	if len(seen) == 0 {
		t.Fatal("no CPU topology in /sys")
	}
	return len(seen)
}

// TestHarnessPrologDrain: a prolog that exits 1 with a message drains the
// node, the message is in slurmd.log, a batch job is requeued and held, and
// Resume brings the node back. The prolog also shows what env it gets.
func TestHarnessPrologDrain(t *testing.T) {
	t.Parallel()
	flag := filepath.Join(t.TempDir(), "broken")
	envOut := filepath.Join(t.TempDir(), "prolog.env")
	prolog := `#!/bin/sh
env > "` + envOut + `"
if [ -e "$GPUPREP_TEST_FLAG" ]; then
	echo "gpuprep-test: GPU 3 fell off the bus" >&2
	exit 1
fi
exit 0
`
	epiOut := filepath.Join(t.TempDir(), "epilog.env")
	c := slurmharness.Start(t, slurmharness.Options{
		Files: map[string]string{
			"prolog.sh": prolog,
			"epilog.sh": "#!/bin/sh\nenv > " + epiOut + ".tmp && mv " + epiOut + ".tmp " + epiOut + "\n",
		},
		Prolog:    "prolog.sh",
		PrologEnv: []string{"GPUPREP_TEST_FLAG=" + flag, "GPUPREP_QUOTED=it's \"quoted\" $HOME"},
		Epilog:    "epilog.sh",
		EpilogEnv: []string{"GPUPREP_EPILOG=1"},
	})

	// Healthy: jobs run, and the hooks saw the job's identity and our env.
	c.MustSrun("-n1", "true")
	env, err := os.ReadFile(envOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SLURM_JOB_ID=", "SLURM_SCRIPT_CONTEXT=prolog_slurmd", "GPUPREP_TEST_FLAG=" + flag, `GPUPREP_QUOTED=it's "quoted" $HOME`} {
		if !strings.Contains(string(env), want) {
			t.Errorf("prolog env lacks %q:\n%s", want, env)
		}
	}
	var epi []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if epi, err = os.ReadFile(epiOut); err == nil {
			break
		}
	}
	for _, want := range []string{"SLURM_SCRIPT_CONTEXT=epilog_slurmd", "SLURM_JOB_EXIT_CODE=0", "GPUPREP_EPILOG=1"} {
		if !strings.Contains(string(epi), want) {
			t.Errorf("epilog env lacks %q:\n%s", want, epi)
		}
	}

	// Broken: srun fails, the node drains, slurmd.log has the message.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := c.Srun("-n1", "true"); err == nil {
		t.Fatalf("srun succeeded on a node whose prolog fails: %s", stderr)
	}
	st, reason := c.NodeState()
	if !strings.HasPrefix(st, "drain") || reason != "Prolog error" {
		t.Errorf("node %q reason %q, want drained, Prolog error", st, reason)
	}
	if !strings.Contains(c.SlurmdLog(), "gpuprep-test: GPU 3 fell off the bus") {
		t.Errorf("slurmd.log lacks the prolog's message:\n%s", c.LogTails(20))
	}

	// A batch job submitted to the drained node waits; once resumed with the
	// prolog still failing it is requeued and held.
	c.Resume()
	id := c.Sbatch("echo never\n")
	if st := c.WaitJob(id, 30*time.Second); st != "PENDING" {
		t.Fatalf("batch job after prolog failure: %s, want PENDING (held)", st)
	}
	job, err := c.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held batch job: JobState=%s Reason=%s", job["JobState"], job["Reason"])
	if !strings.Contains(job["Reason"], "held") {
		t.Errorf("job Reason=%q, want launch_failed_requeued_held", job["Reason"])
	}

	// Fixed: resume, release, both kinds of job run.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	c.Resume()
	if err := c.Release(id); err != nil {
		t.Fatal(err)
	}
	if st := c.WaitJob(id, 30*time.Second); st != "COMPLETED" {
		t.Fatalf("released job: %s", st)
	}
	c.MustSrun("-n1", "true")
	if st, reason, ok := c.WaitNodeState(10*time.Second, "idle"); !ok {
		t.Errorf("node %s (%s) at the end", st, reason)
	}
}

// simulated8GPU is what gpuprep-gres prints for a 2-socket, 56-core, SMT,
// 8-GPU node: a node line and gres.conf lines (File= filled in by the test).
const simulatedNodeLine = "NodeName=sim8 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8"

func simulatedGres(devs []string) string {
	var b strings.Builder
	b.WriteString("AutoDetect=off\n")
	for i, d := range devs {
		cores := "0-55"
		if i >= 4 {
			cores = "56-111"
		}
		var l []string
		for j := range devs {
			if i == j {
				l = append(l, "-1")
			} else {
				l = append(l, "18")
			}
		}
		fmt.Fprintf(&b, "Name=gpu Type=h100 File=%s Cores=%s Links=%s\n", d, cores, strings.Join(l, ","))
	}
	return b.String()
}

// TestHarnessSimulatedNode: a generated node line claiming far more than
// this machine has (224 CPUs, 8 GPUs, 2 TB) is accepted with
// config_overrides (which the harness adds by itself), and jobs run.
func TestHarnessSimulatedNode(t *testing.T) {
	t.Parallel()
	devs := slurmharness.MakeDevices(t, t.TempDir(), []int{0, 1, 2, 3, 4, 5, 6, 7})
	c := slurmharness.Start(t, slurmharness.Options{NodeLine: simulatedNodeLine, GresConf: simulatedGres(devs)})
	if !strings.Contains(c.NodeLine, "NodeName="+c.Node+" NodeAddr=127.0.0.1") {
		t.Errorf("node line %q", c.NodeLine)
	}
	out, err := c.SlurmdG()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gs, _ := slurmharness.ParseSlurmdG(out)
	if len(gs) != 8 {
		t.Fatalf("slurmd -G: %d GPUs, want 8:\n%s", len(gs), out)
	}
	for i, g := range gs {
		if g.Type != "h100" || g.CoreCnt != 224 || g.File != devs[i] || (i < 4) != (g.Cores == "0-55") {
			t.Errorf("GPU %d: %+v", i, g)
		}
	}
	info, err := c.NodeInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info["CPUTot"] != "224" || info["Gres"] != "gpu:h100:8(S:0-1)" {
		t.Errorf("scontrol show node: CPUTot=%s Gres=%s", info["CPUTot"], info["Gres"])
	}
	out = c.MustSrun("--gres=gpu:h100:3", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
	if n := len(strings.Split(strings.TrimSpace(out), ",")); n != 3 {
		t.Errorf("CUDA_VISIBLE_DEVICES=%q, want 3 GPUs", out)
	}
}

// TestHarnessNoConfigOverrides documents why the harness adds
// config_overrides: without it the simulated node registers as invalid.
func TestHarnessNoConfigOverrides(t *testing.T) {
	t.Parallel()
	devs := slurmharness.MakeDevices(t, t.TempDir(), []int{0, 1, 2, 3, 4, 5, 6, 7})
	c := slurmharness.Start(t, slurmharness.Options{
		NodeLine:        simulatedNodeLine,
		GresConf:        simulatedGres(devs),
		ConfigOverrides: slurmharness.Off,
		ReadyStates:     []string{"inval", "drained", "down"},
	})
	st, reason := c.NodeState()
	t.Logf("without config_overrides: %s (%s)", st, reason)
	if st != "inval" || !strings.Contains(reason, "Low socket*core*thread count") {
		t.Errorf("node %s (%s), want inval with Low socket*core*thread count", st, reason)
	}
	out, _ := c.SlurmdG()
	if !strings.Contains(out, "xcpuinfo_abs_to_mac: failed") {
		t.Errorf("slurmd -G without config_overrides did not reject Cores=56-111:\n%s", out)
	}
}

// TestHarnessCgroupV1: with proctrack/cgroup and task/cgroup (cgroup v1, as
// on the development and CI machines) a job lands in its own job cgroup and
// its devices cgroup allows only the GPU it was given.
func TestHarnessCgroupV1(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/fs/cgroup/devices/devices.list"); err != nil {
		t.Skip("no cgroup v1 devices controller here (cgroup v2 needs systemd/dbus for Slurm 22.05)")
	}
	devs := slurmharness.MakeDevices(t, t.TempDir(), []int{0, 1})
	c := slurmharness.Start(t, slurmharness.Options{
		Gres:       "gpu:2",
		GresConf:   "Name=gpu File=" + devs[0] + "\nName=gpu File=" + devs[1] + "\n",
		TaskPlugin: "task/cgroup,task/affinity",
		ExtraConf:  []string{"ProctrackType=proctrack/cgroup"},
		CgroupConf: "CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainDevices=yes\n",
	})
	// The fake devices have no driver: opening an allowed one fails with
	// ENXIO ("No such device or address"), a denied one with EPERM.
	script := `sed -n 's/^[0-9]*:devices://p' /proc/self/cgroup
echo "CVD=$CUDA_VISIBLE_DEVICES"
for d in ` + devs[0] + " " + devs[1] + `; do cat "$d" 2>&1; done
true`
	out := c.MustSrun("--gres=gpu:1", "sh", "-c", script)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "/job_") || lines[1] != "CVD=0" {
		t.Fatalf("want the task in a job cgroup with CUDA_VISIBLE_DEVICES=0:\n%s", out)
	}
	if !strings.Contains(lines[2], "No such device or address") || !strings.Contains(lines[3], "Operation not permitted") {
		t.Errorf("devices cgroup should allow nvidia0 and deny nvidia1:\n%s", out)
	}
}

// TestHarnessMIGDevices: MIG-style gres.conf lines (MultipleFiles= with the
// parent GPU and nvidia-caps devices) are accepted, and a job gets one.
func TestHarnessMIGDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gpu := slurmharness.MakeDevices(t, dir, []int{0})
	caps := slurmharness.MakeCapDevices(t, dir, []int{21, 22, 30, 31})
	gres := "AutoDetect=off\n" +
		"Name=gpu Type=1g.10gb MultipleFiles=" + gpu[0] + "," + caps[0] + "," + caps[1] + "\n" +
		"Name=gpu Type=1g.10gb MultipleFiles=" + gpu[0] + "," + caps[2] + "," + caps[3] + "\n"
	c := slurmharness.Start(t, slurmharness.Options{Gres: "gpu:1g.10gb:2", GresConf: gres})
	out, err := c.SlurmdG()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gs, _ := slurmharness.ParseSlurmdG(out)
	if len(gs) != 2 || gs[0].Type != "1g.10gb" || gs[0].File != gpu[0]+","+caps[0]+","+caps[1] {
		t.Fatalf("slurmd -G:\n%s", out)
	}
	t.Logf("MIG lines: Index=%d and Index=%d", gs[0].Index, gs[1].Index)
	env := c.MustSrun("--gres=gpu:1g.10gb:1", "sh", "-c", "echo CVD=$CUDA_VISIBLE_DEVICES STEP=$SLURM_STEP_GPUS")
	t.Logf("MIG job: %s", strings.TrimSpace(env))
	if !strings.Contains(env, "CVD=") || strings.Contains(env, "CVD= ") {
		t.Errorf("MIG job env: %s", env)
	}
}
