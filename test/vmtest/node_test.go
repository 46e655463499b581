package vmtest

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/slurm"
	"gpuprep/test/vmnode"
)

// TestNodeIsModernSlurm: the VM is the node the other scenarios rely on:
// systemd as PID 1, cgroup v2 with cpuset available, two NUMA nodes, slurmd
// a systemd service, Slurm set up as a modern GPU node (proctrack/cgroup,
// task/cgroup, cgroup/v2, PrologFlags=Contain, gpuprep's hooks), and a job of
// alice's running in its own cgroup under slurmstepd's scope, confined to its
// CPU, with gpuprep's prolog and epilog run around it.
func TestNodeIsModernSlurm(t *testing.T) {
	vm := Node(t)
	ctx := Ctx(t, 5*time.Minute)

	if comm := MustRead(t, ctx, "/proc/1/comm"); comm != "systemd" {
		t.Errorf("PID 1 is %q, want systemd", comm)
	}
	if fs := strings.TrimSpace(MustRun(t, ctx, "stat -fc %T /sys/fs/cgroup")); fs != "cgroup2fs" {
		t.Errorf("/sys/fs/cgroup is %s, want cgroup2fs", fs)
	}
	if c := strings.Fields(MustRead(t, ctx, "/sys/fs/cgroup/cgroup.controllers")); !slices.Contains(c, "cpuset") || !slices.Contains(c, "memory") {
		t.Errorf("cgroup.controllers %v lacks cpuset or memory", c)
	}
	for n, want := range []string{"0-1", "2-3"} {
		if got := MustRead(t, ctx, fmt.Sprintf("/sys/devices/system/node/node%d/cpulist", n)); got != want {
			t.Errorf("NUMA node %d has CPUs %q, want %s", n, got, want)
		}
	}
	if Exists(t, ctx, "/sys/devices/system/node/node2") {
		t.Error("more than two NUMA nodes")
	}

	major, minor, err := vm.SlurmVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bySLUID := vmnode.NamesJobCgroupsBySLUID(major, minor)
	t.Logf("Slurm %d.%02d: job cgroups named by SLUID: %v", major, minor, bySLUID)

	// slurmd runs in its service's cgroup; 26.05's moves itself into a
	// child cgroup of it (seen in the sid VM).
	pid, err := vm.MainPID(ctx, "slurmd.service")
	if err != nil {
		t.Fatal(err)
	}
	wantSlurmd := "/system.slice/slurmd.service"
	if bySLUID {
		wantSlurmd += "/slurmd"
	}
	if cg, err := vm.CgroupOf(ctx, pid); err != nil || cg != wantSlurmd {
		t.Errorf("slurmd (pid %d) in cgroup %q (%v), want %s", pid, cg, err, wantSlurmd)
	}

	// The node line in force is what slurmd detects: 2 sockets x 2 cores.
	detected := vmnode.ParseScontrol(strings.SplitN(MustRun(t, ctx, "slurmd -C"), "\n", 2)[0])
	info := vmnode.ParseScontrol(MustRun(t, ctx, "scontrol show node -o "+vmnode.NodeName))
	if detected["SocketsPerBoard"] != "2" || detected["CoresPerSocket"] != "2" || detected["ThreadsPerCore"] != "1" {
		t.Errorf("slurmd -C: %v, want 2 sockets x 2 cores x 1 thread", detected)
	}
	if info["Sockets"] != "2" || info["CoresPerSocket"] != "2" || info["CPUTot"] != "4" || info["State"] != "IDLE" {
		t.Errorf("scontrol show node: Sockets=%s CoresPerSocket=%s CPUTot=%s State=%s, want 2, 2, 4, IDLE",
			info["Sockets"], info["CoresPerSocket"], info["CPUTot"], info["State"])
	}
	conf := MustRun(t, ctx, "scontrol show config")
	for _, want := range []string{
		"ProctrackType           = proctrack/cgroup",
		"TaskPlugin              = task/cgroup,task/affinity",
		"PrologFlags             = Alloc,Contain", // Contain implies Alloc
		"SelectType              = select/cons_tres",
		"CgroupPlugin            = cgroup/v2",
		"ConstrainCores          = yes",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("scontrol show config lacks %q", want)
		}
	}
	// 24.11 and later print the hooks as a list: "Prolog[0]   = ...".
	for _, hook := range []string{"Prolog", "Epilog"} {
		re := regexp.MustCompile(`(?m)^` + hook + `(\[0\])? +=\s*/usr/local/sbin/gpuprep-` + strings.ToLower(hook) + `$`)
		if !re.MatchString(conf) {
			t.Errorf("scontrol show config has no line matching %s", re)
		}
	}

	// A batch job of alice's: its cgroup, its CPU, gpuprep's record of it.
	id := StartSleepJob(t, ctx, "alice", 300, "-c1")
	cg := MustJobCgroup(t, ctx, id)
	record := "/var/lib/gpuprep/job-" + strconv.Itoa(id) + ".json"
	var rec struct {
		SLUID string `json:"sluid"`
	}
	if err := json.Unmarshal([]byte(MustRead(t, ctx, record)), &rec); err != nil {
		t.Fatalf("gpuprep's job record %s: %v", record, err)
	}
	// gpuprep records the job's SLUID where Slurm gives one
	// (SLURM_JOB_SLUID), and the job's cgroup is named by it there.
	name := "job_" + strconv.Itoa(id)
	if bySLUID {
		if _, ok := slurm.ParseSLUID(rec.SLUID); !ok {
			t.Errorf("gpuprep's job record has sluid %q, want the job's SLURM_JOB_SLUID", rec.SLUID)
		}
		name = rec.SLUID
	} else if rec.SLUID != "" {
		t.Errorf("gpuprep's job record has sluid %q on Slurm %d.%02d, want none", rec.SLUID, major, minor)
	}
	if want := "/sys/fs/cgroup/system.slice/" + vmnode.NodeName + "_slurmstepd.scope/" + name; cg != want {
		t.Errorf("job cgroup %s, want %s", cg, want)
	}
	// -f: the extern step's own "sleep 100000000" runs as alice too.
	sleepPID := strings.Fields(MustRun(t, ctx, "pgrep -u alice -xf 'sleep 300'"))
	if len(sleepPID) != 1 {
		t.Fatalf("alice's sleep processes: %v, want one", sleepPID)
	}
	spid, _ := strconv.Atoi(sleepPID[0])
	if got, err := vm.CgroupOf(ctx, spid); err != nil || !strings.HasPrefix("/sys/fs/cgroup"+got, cg+"/") {
		t.Errorf("the job's sleep is in %q (%v), want below %s", got, err, cg)
	}
	if cpus := MustRead(t, ctx, cg+"/cpuset.cpus.effective"); strings.ContainsAny(cpus, ",-") {
		t.Errorf("job of -c1 has CPUs %q, want one (task/cgroup ConstrainCores)", cpus)
	}
	if !Exists(t, ctx, "/run/gpuprep/node-description") {
		t.Error("gpuprep's prolog wrote no /run/gpuprep/node-description")
	}

	// An srun of alice's lands in a step cgroup of its own job.
	out, _, err := vm.Srun(ctx, "alice", "-n1", "cat", "/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	// srun from outside the batch job is a job of its own: its cgroup is
	// named like the batch job's (job_<id>, or its SLUID on 26.05).
	srunCg := regexp.MustCompile(`_slurmstepd\.scope/job_[0-9]+/step_0/`)
	if bySLUID {
		srunCg = regexp.MustCompile(`_slurmstepd\.scope/s[0-9A-Z]{13}/step_0/`)
	}
	if !srunCg.MatchString(out) {
		t.Errorf("srun task's cgroup: %q, want a match for %s", out, srunCg)
	}

	// The end: the epilog removes the record, the job's cgroup goes, the
	// node is idle (not drained by a failed hook).
	if err := vm.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.WaitJobEnd(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.WaitUntil(ctx, 500*time.Millisecond, "! test -e "+vmnode.Quote(record)+" && ! test -e "+vmnode.Quote(cg)); err != nil {
		t.Errorf("after the job: %v (record %s, cgroup %s)", err, record, path.Base(cg))
	}
	if st, reason, err := vm.WaitNodeState(Ctx(t, 30*time.Second), "idle"); err != nil {
		t.Errorf("node %s (%s) after the job: %v", st, reason, err)
	}
	if n := MustRun(t, ctx, "journalctl -b -q --no-pager -t gpuprep-prolog | grep -c placeholder || true"); strings.TrimSpace(n) != "0" {
		t.Errorf("the image's placeholder prolog ran %s times, want gpuprep's", strings.TrimSpace(n))
	}
}
