package bind

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/srunconf"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// fakeMempolicy makes set_mempolicy refuse the given modes with errno.
func fakeMempolicy(t *testing.T, errno unix.Errno, refuse ...int) *[][2]int {
	t.Helper()
	var calls [][2]int
	old := setMempolicy
	setMempolicy = func(mode int, nodes []int) error {
		calls = append(calls, [2]int{mode, len(nodes)})
		if slices.Contains(refuse, mode) {
			return errno
		}
		return nil
	}
	t.Cleanup(func() { setMempolicy = old })
	return &calls
}

// A refused set_mempolicy falls back MPOL_BIND -> MPOL_PREFERRED -> none,
// each step a memory_policy warning naming the errno; never silently.
func TestApplyMemoryFallback(t *testing.T) {
	p := Plan{MemPolicy: srunconf.MemBind, MemNodes: []int{1, 3}}
	for _, c := range []struct {
		name     string
		errno    unix.Errno
		refuse   []int
		policy   string
		nodes    []int
		warnings int
		word     string
	}{
		{"accepted", 0, nil, srunconf.MemBind, []int{1, 3}, 0, ""},
		{"seccomp refuses bind", unix.EPERM, []int{mpolBind}, srunconf.MemPreferred, []int{1}, 1, "EPERM"},
		{"no NUMA syscalls", unix.ENOSYS, []int{mpolBind, mpolPreferred}, srunconf.MemOff, nil, 2, "ENOSYS"},
	} {
		calls := fakeMempolicy(t, c.errno, c.refuse...)
		a, ws, err := Apply(p)
		if err != nil || a.MemPolicy != c.policy || !slices.Equal(a.MemNodes, c.nodes) || len(ws) != c.warnings {
			t.Errorf("%s: applied %+v, warnings %v, err %v", c.name, a, ws, err)
		}
		for _, w := range ws {
			if w.Check != "memory_policy" || !strings.Contains(w.Msg, c.word) || !strings.Contains(w.Msg, "refused") {
				t.Errorf("%s: warning %+v", c.name, w)
			}
		}
		if len(*calls) != c.warnings+min(1, 2-c.warnings) {
			t.Errorf("%s: set_mempolicy calls %v", c.name, *calls)
		}
	}
	// Nothing to do: no syscall at all.
	calls := fakeMempolicy(t, 0)
	for _, q := range []Plan{{MemPolicy: srunconf.MemOff, MemNodes: []int{0}}, {MemPolicy: srunconf.MemBind}} {
		if a, ws, err := Apply(q); err != nil || a.MemPolicy != srunconf.MemOff || ws != nil || len(*calls) != 0 {
			t.Errorf("%+v: %+v %v %v, calls %v", q, a, ws, err, *calls)
		}
	}
	// Preferred names one node: the first (nearest).
	if a, _, _ := Apply(Plan{MemPolicy: srunconf.MemPreferred, MemNodes: []int{2, 0}}); !slices.Equal(a.MemNodes, []int{2}) || (*calls)[0] != [2]int{mpolPreferred, 1} {
		t.Errorf("preferred: %+v, calls %v", a, *calls)
	}
}

// probe is the rankprobe output.
type probe struct {
	CPUsAllowed string            `json:"cpus_allowed_list"`
	MemsAllowed string            `json:"mems_allowed_list"`
	MemPolicy   string            `json:"mem_policy"`
	MemNodes    []int             `json:"mem_nodes"`
	MemErr      string            `json:"mem_policy_error"`
	Visible     *string           `json:"cuda_visible_devices"`
	NCCL        map[string]string `json:"nccl"`
}

// buildProbe builds test/rankprobe into the test's folder.
func buildProbe(t *testing.T) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatal("no go toolchain to build test/rankprobe")
		}
	}
	mod, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rankprobe")
	cmd := exec.Command(goBin, "build", "-o", out, "./test/rankprobe")
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/rankprobe: %v\n%s", err, b)
	}
	return out
}

// The real kernel: a thread that Applies a plan and then starts the probe
// hands it the CPUs and memory policy; the probe sees them in
// /proc/self/status and get_mempolicy, with the plan's environment.
func TestApplyRealKernel(t *testing.T) {
	probePath := buildProbe(t)
	allowed, _, err := TaskCPUs(host.NewRoot("/"))
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed.Max()
	node := 0
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Mems_allowed_list:"); ok {
				if s, err := cpuset.Parse(strings.TrimSpace(v)); err == nil && !s.IsEmpty() {
					node = s.Min()
				}
			}
		}
	}
	plan := Plan{CPUs: cpuset.New(cpu), MemPolicy: srunconf.MemBind, MemNodes: []int{node}, Visible: "GPU-1", HCAs: []string{"mlx5_0:1"}}
	type result struct {
		applied Applied
		warns   []Warning
		out     []byte
		err     error
	}
	done := make(chan result)
	go func() {
		// Never unlocked: the thread, with its changed affinity and
		// policy, ends with this goroutine.
		runtime.LockOSThread()
		var r result
		if r.applied, r.warns, r.err = Apply(plan); r.err == nil {
			cmd := exec.Command(probePath)
			cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+plan.Visible, "NCCL_IB_HCA="+strings.Join(plan.HCAs, ","))
			r.out, r.err = cmd.Output()
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var p probe
	if err := json.Unmarshal(r.out, &p); err != nil {
		t.Fatalf("probe output %s: %v", r.out, err)
	}
	if p.CPUsAllowed != strconv.Itoa(cpu) || !r.applied.CPUs.Equal(plan.CPUs) {
		t.Errorf("probe runs on CPUs %q, applied %s; want %d", p.CPUsAllowed, r.applied.CPUs, cpu)
	}
	switch {
	case r.applied.MemPolicy == srunconf.MemBind:
		if p.MemPolicy != "bind" || !slices.Equal(p.MemNodes, []int{node}) {
			t.Errorf("probe memory policy %q on %v (%s), want bind on node %d", p.MemPolicy, p.MemNodes, p.MemErr, node)
		}
	case len(r.warns) == 0:
		t.Errorf("memory policy %q in force without a warning", r.applied.MemPolicy)
	default:
		t.Logf("this kernel refused MPOL_BIND: %v", r.warns)
	}
	if p.Visible == nil || *p.Visible != "GPU-1" || p.NCCL["NCCL_IB_HCA"] != "mlx5_0:1" {
		t.Errorf("probe environment: %v %v", p.Visible, p.NCCL)
	}
}

// TaskCPUs finds the job's CPUs in the process's cgroup: cgroup v2's
// cpuset.cpus.effective, walking up from a task cgroup that has none, and
// v1's cpuset controller; no cgroup file is unknown, garbage an error.
func TestTaskCPUs(t *testing.T) {
	write := func(dir string, files map[string]string) host.Root {
		for p, s := range files {
			f := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return host.NewRoot(dir)
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
		fails bool
	}{
		{"v2", map[string]string{
			"proc/self/cgroup": "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_1\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/cpuset.cpus.effective":        "0-63\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/cpuset.cpus.effective": "4-7,68-71\n",
		}, "4-7,68-71", false},
		{"v1", map[string]string{
			"proc/self/cgroup": "12:memory:/slurm/uid_1/job_7/step_0\n5:cpuset:/slurm/uid_1/job_7/step_0/task_0\n",
			"sys/fs/cgroup/cpuset/slurm/uid_1/job_7/step_0/task_0/cpuset.cpus":           "\n",
			"sys/fs/cgroup/cpuset/slurm/uid_1/job_7/step_0/cpuset.effective_cpus":        "2-3\n",
			"sys/fs/cgroup/cpuset/slurm/uid_1/job_7/step_0/task_0/cpuset.effective_cpus": "",
		}, "2-3", false},
		{"no cgroup", map[string]string{"proc/self/cgroup": "0::/\n"}, "", false},
		{"garbage", map[string]string{
			"proc/self/cgroup":                        "0::/job\n",
			"sys/fs/cgroup/job/cpuset.cpus.effective": "zz\n",
		}, "", true},
	} {
		allowed, job, err := TaskCPUs(write(t.TempDir(), c.files))
		if (err != nil) != c.fails || job.String() != c.want {
			t.Errorf("%s: job %q, err %v; want %q", c.name, job, err, c.want)
		}
		if !c.fails && allowed.IsEmpty() {
			t.Errorf("%s: no allowed CPUs", c.name)
		}
	}
}

// What a container's mounts put where the cgroup files should be never
// blocks nor costs a rank: a FIFO (opening one without a writer would
// block for ever) and a file over 64 KiB are not read, and count as
// absent, so the parent cgroup's cpuset is used.
func TestTaskCPUsBounded(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "sys/fs/cgroup/job")
	if err := os.MkdirAll(filepath.Join(job, "step_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "proc/self"), 0o755)
	os.WriteFile(filepath.Join(dir, "proc/self/cgroup"), []byte("0::/job/step_0/task_0\n"), 0o644)
	os.WriteFile(filepath.Join(job, "cpuset.cpus.effective"), []byte("0-3\n"), 0o644)
	// step_0: a huge list (all of it CPU 0); task_0: a FIFO.
	os.WriteFile(filepath.Join(job, "step_0/cpuset.cpus.effective"), []byte(strings.Repeat("0,", 1<<20)+"0\n"), 0o644)
	os.MkdirAll(filepath.Join(job, "step_0/task_0"), 0o755)
	if err := unix.Mkfifo(filepath.Join(job, "step_0/task_0/cpuset.cpus.effective"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		job cpuset.Set
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, j, err := TaskCPUs(host.NewRoot(dir))
		done <- result{j, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.job.String() != "0-3" {
			t.Errorf("job CPUs %q, %v; want the parent's 0-3", r.job, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TaskCPUs still blocked on a FIFO after 10 s")
	}
}
