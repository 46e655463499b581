package srunwrapcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/srunconf"

	"gpuprep/internal/testroot"
	"gpuprep/lib/bind"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
)

// fakeOS records what srunwrap asked of the system instead of doing it.
type fakeOS struct {
	allowed, job cpuset.Set
	applied      []bind.Plan
	execPath     string
	execArgv     []string
	execEnv      []string
	execCalls    int
	// uid is the user srunwrap runs as; nil: this test's.
	uid func() int
}

func (f *fakeOS) system(environ []string) system {
	uid := f.uid
	if uid == nil {
		uid = os.Getuid
	}
	return system{
		uid:      uid,
		taskCPUs: func(host.Root) (cpuset.Set, cpuset.Set, error) { return f.allowed, f.job, nil },
		memlock:  func() (uint64, error) { return ^uint64(0), nil },
		environ:  func() []string { return environ },
		lookPath: func(file string) (string, error) {
			if file == "missing-cmd" {
				return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
			}
			return "/usr/bin/" + filepath.Base(file), nil
		},
		self: func() (string, error) { return "/opt/gpuprep/bin/srunwrap", nil },
		apply: func(p bind.Plan) (bind.Applied, []bind.Warning, error) {
			f.applied = append(f.applied, p)
			return bind.Applied{CPUs: p.CPUs, MemPolicy: p.MemPolicy, MemNodes: p.MemNodes}, nil, nil
		},
		exec: func(path string, argv, env []string) error {
			f.execCalls++
			f.execPath, f.execArgv, f.execEnv = path, argv, env
			return errors.New("exec faked")
		},
	}
}

// envOf is the value of name in an environment list ("" when absent).
// The last one counts, as for getenv after a later setenv.
func envOf(env []string, name string) string {
	val := ""
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			val = v
		}
	}
	return val
}

// warnings are stderr's lines but the fake exec's failure and the
// fixture roots' missing /dev/infiniband (sysfs is simulated, /dev not).
func warnings(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.Contains(l, "exec faked") && !strings.Contains(l, "/dev/infiniband/uverbs") {
			out = append(out, l)
		}
	}
	return out
}

// rankEnv is what slurmstepd gives local rank i of an n-rank step on all
// 8 GPUs of one node.
func rankEnv(i, n int) []string {
	return []string{
		"PATH=/usr/bin:/bin", "HOME=/home/alice", "FOO=bar",
		"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", fmt.Sprintf("SLURM_PROCID=%d", i), fmt.Sprintf("SLURM_LOCALID=%d", i),
		"SLURM_NODEID=0", fmt.Sprintf("SLURM_NTASKS=%d", n), fmt.Sprintf("SLURM_STEP_TASKS_PER_NODE=%d", n),
		"SLURM_STEP_GPUS=0,1,2,3,4,5,6,7", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "SLURMD_NODENAME=dgxh100-01",
	}
}

// runWrap runs srunwrap in-process with args and environ on the fake OS.
func runWrap(t *testing.T, f *fakeOS, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := cmdenv.Env{Args: args, Getenv: func(k string) string { return envOf(environ, k) }, Stdout: &out, Stderr: &errb}
	code = run(e, f.system(environ))
	return code, out.String(), errb.String()
}

func dgxh100(t *testing.T) (root string, all cpuset.Set) {
	t.Helper()
	root = testroot.Shared(t, "dgxh100")
	return root, cpuset.MustParse("0-223")
}

// Eight ranks on eight GPUs: each rank execs the command as given, with
// its own GPU alone visible, the HCA behind its GPU's switch, the rest of
// its environment untouched, and is bound to CPUs and memory of its GPU's
// NUMA node, disjoint from the other ranks'.
func TestEightRanks(t *testing.T) {
	root, all := dgxh100(t)
	numa0 := cpuset.MustParse("0-55,112-167")
	seen := cpuset.New()
	for i := 0; i < 8; i++ {
		f := &fakeOS{allowed: all, job: all}
		code, _, stderr := runWrap(t, f, rankEnv(i, 8), "--root", root, "--", "python", "train.py", "--lr", "3e-4")
		if code != exitCannotExec || f.execCalls != 1 {
			t.Fatalf("rank %d: exit %d, exec calls %d: %s", i, code, f.execCalls, stderr)
		}
		if f.execPath != "/usr/bin/python" || strings.Join(f.execArgv, " ") != "python train.py --lr 3e-4" {
			t.Errorf("rank %d: exec %s %q", i, f.execPath, f.execArgv)
		}
		if got := envOf(f.execEnv, "CUDA_VISIBLE_DEVICES"); got != fmt.Sprint(i) {
			t.Errorf("rank %d: CUDA_VISIBLE_DEVICES=%q", i, got)
		}
		if got, want := envOf(f.execEnv, "NCCL_IB_HCA"), fmt.Sprintf("=mlx5_%d:1", i); got != want {
			t.Errorf("rank %d: NCCL_IB_HCA=%q, want %q", i, got, want)
		}
		if envOf(f.execEnv, "FOO") != "bar" || envOf(f.execEnv, "SLURM_PROCID") != fmt.Sprint(i) {
			t.Errorf("rank %d: the task's own environment was not passed on: %q", i, f.execEnv)
		}
		if len(f.applied) != 1 {
			t.Fatalf("rank %d: applied %d plans", i, len(f.applied))
		}
		p := f.applied[0]
		node := 0
		if i >= 4 {
			node = 1
		}
		if p.CPUs.Size() != 28 || !p.CPUs.Intersection(seen).IsEmpty() || (node == 0) != p.CPUs.IsSubsetOf(numa0) {
			t.Errorf("rank %d: CPUs %s: want 14 whole cores of NUMA node %d, apart from %s", i, p.CPUs, node, seen)
		}
		seen = seen.Union(p.CPUs)
		if len(p.MemNodes) != 1 || p.MemNodes[0] != node || p.MemPolicy != srunconf.MemBind {
			t.Errorf("rank %d: memory %s %v, want bind %d", i, p.MemPolicy, p.MemNodes, node)
		}
		if w := warnings(stderr); len(w) > 0 {
			t.Errorf("rank %d: stderr %q, want no warning", i, w)
		}
	}
}

// A check set to refuse stops the command: exit 1, nothing exec'd, and the
// reason on stderr. The same finding with the default (warn) runs it.
func TestRefuse(t *testing.T) {
	root, all := dgxh100(t)
	refusing := descRoot(t, "[srunwrap.checks]\nnccl_env = \"refuse\"\n")
	env := append(rankEnv(2, 8), "NCCL_P2P_DISABLE=1")
	f := &fakeOS{allowed: all, job: all}
	code, _, stderr := runWrap(t, f, env, "--root", refusing, "--", "python")
	if code != cmdenv.ExitMismatch || f.execCalls != 0 || !strings.Contains(stderr, "NCCL_P2P_DISABLE=1") || !strings.Contains(stderr, "not running python") {
		t.Errorf("refuse: exit %d, exec calls %d, stderr %q", code, f.execCalls, stderr)
	}
	f = &fakeOS{allowed: all, job: all}
	code, _, stderr = runWrap(t, f, append(rankEnv(0, 8), "NCCL_P2P_DISABLE=1"), "--root", root, "--", "python")
	if f.execCalls != 1 || !strings.Contains(stderr, "warning: rank 0: NCCL_P2P_DISABLE=1") || !strings.Contains(stderr, "327 to 28 GB/s") {
		t.Errorf("warn: exit %d, exec calls %d, stderr %q", code, f.execCalls, stderr)
	}
	// Node-wide findings are printed by local rank 0 only.
	f = &fakeOS{allowed: all, job: all}
	_, _, stderr = runWrap(t, f, append(rankEnv(3, 8), "NCCL_P2P_DISABLE=1"), "--root", root, "--", "python")
	if strings.Contains(stderr, "NCCL_P2P_DISABLE") {
		t.Errorf("rank 3 repeated a node-wide warning: %q", stderr)
	}
}

// Bad input never stops the command: one clear line naming the variable,
// and the command runs unbound with its environment as it was.
func TestBadInputRunsUnbound(t *testing.T) {
	root, all := dgxh100(t)
	for _, c := range []struct {
		name, set, want string
	}{
		{"garbage SLURM_LOCALID", "SLURM_LOCALID=two", "SLURM_LOCALID"},
		{"unknown GPU UUID", "CUDA_VISIBLE_DEVICES=GPU-00000000-dead-beef-0000-000000000000", "GPU-00000000-dead-beef"},
		{"garbage CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES=0,,zz", "CUDA_VISIBLE_DEVICES"},
		{"not under srun", "SLURM_PROCID=", "SLURM_PROCID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(rankEnv(1, 8), c.set)
			f := &fakeOS{allowed: all, job: all}
			_, _, stderr := runWrap(t, f, env, "--root", root, "--", "python")
			if f.execCalls != 1 || len(f.applied) != 0 {
				t.Fatalf("exec calls %d, plans applied %d: want the command run unbound; stderr %q", f.execCalls, len(f.applied), stderr)
			}
			name, val, _ := strings.Cut(c.set, "=")
			if got := envOf(f.execEnv, name); got != val {
				t.Errorf("%s=%q passed on as %q", name, val, got)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if !strings.Contains(stderr, c.want) || !strings.HasPrefix(lines[0], "srunwrap: warning: ") {
				t.Errorf("stderr %q: want a warning naming %s", stderr, c.want)
			}
		})
	}
	// No node description and no sysfs to fall back on: still runs.
	f := &fakeOS{allowed: all, job: all}
	_, _, stderr := runWrap(t, f, rankEnv(0, 8), "--root", t.TempDir(), "--", "python")
	if f.execCalls != 1 || !strings.Contains(stderr, "warning") {
		t.Errorf("empty root: exec calls %d, stderr %q", f.execCalls, stderr)
	}
}

func TestExitCodes(t *testing.T) {
	root, all := dgxh100(t)
	f := &fakeOS{allowed: all, job: all}
	if code, _, stderr := runWrap(t, f, rankEnv(0, 8), "--root", root, "--", "missing-cmd"); code != exitNotFound || !strings.Contains(stderr, "missing-cmd") {
		t.Errorf("missing command: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runWrap(t, f, rankEnv(0, 8), "--root", root); code != cmdenv.ExitBadInput || !strings.Contains(stderr, "no command") {
		t.Errorf("no command: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runWrap(t, f, rankEnv(0, 8), "--no-such-flag", "--", "python"); code != cmdenv.ExitBadInput || strings.Count(stderr, "\n") != 1 {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr)
	}
	// The command's own flags are the command's.
	f = &fakeOS{allowed: all, job: all}
	runWrap(t, f, rankEnv(0, 8), "--root", root, "python", "--explain", "-v")
	if strings.Join(f.execArgv, " ") != "python --explain -v" {
		t.Errorf("argv %q: flags after the command belong to it", f.execArgv)
	}
}

// --srun execs srun with this srunwrap, and the flags before --srun,
// inserted before the command.
func TestSrun(t *testing.T) {
	f := &fakeOS{}
	code, _, stderr := runWrap(t, f, []string{"PATH=/usr/bin"}, "-v", "--root", "/x", "--srun", "-N2", "--gpus-per-node=8", "--", "python", "train.py")
	want := "srun -N2 --gpus-per-node=8 /opt/gpuprep/bin/srunwrap -v --root /x -- python train.py"
	if f.execCalls != 1 || f.execPath != "/usr/bin/srun" || strings.Join(f.execArgv, " ") != want {
		t.Errorf("exit %d: exec %s %q, want %q; stderr %q", code, f.execPath, f.execArgv, want, stderr)
	}
	for _, args := range [][]string{
		{"--srun", "-N2", "python"},        // no --
		{"--srun", "-N2", "--"},            // no command
		{"--explain", "--srun", "--", "x"}, // runs nothing
		{"--bogus", "--srun", "--", "x"},
	} {
		f := &fakeOS{}
		if code, _, stderr := runWrap(t, f, nil, args...); code != cmdenv.ExitBadInput || f.execCalls != 0 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, exec calls %d, stderr %q", args, code, f.execCalls, stderr)
		}
	}
}

// --explain --json: every local rank's plan with its NCCL variables, as
// data.
func TestExplainJSON(t *testing.T) {
	root, all := dgxh100(t)
	f := &fakeOS{allowed: all, job: all}
	code, out, stderr := runWrap(t, f, rankEnv(5, 16), "--root", root, "--explain", "--json")
	if code != 0 || f.execCalls != 0 {
		t.Fatalf("exit %d, exec calls %d: %s", code, f.execCalls, stderr)
	}
	var x explanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err)
	}
	if x.Tasks != 16 || len(x.Ranks) != 16 || x.Node != "dgxh100-01" {
		t.Fatalf("explanation: %d tasks, %d ranks, node %q", x.Tasks, len(x.Ranks), x.Node)
	}
	for i, r := range x.Ranks {
		if r.GPU == nil || r.GPU.Index != i%8 || r.Visible != fmt.Sprint(i%8) {
			t.Errorf("rank %d: GPU %+v visible %q, want GPU %d", i, r.GPU, r.Visible, i%8)
		}
		hca := ""
		for _, v := range r.Env {
			if v.Name == "NCCL_IB_HCA" {
				hca = v.Value
			}
		}
		if want := fmt.Sprintf("=mlx5_%d:1", i%8); hca != want {
			t.Errorf("rank %d: NCCL_IB_HCA %q, want %q", i, hca, want)
		}
	}
}

// --explain outside a step plans a whole-node job; the text output has a
// row per rank and says where the node and the config came from.
func TestExplainText(t *testing.T) {
	root, _ := dgxh100(t)
	f := &fakeOS{allowed: cpuset.MustParse("0-1"), job: cpuset.MustParse("0-1")}
	code, out, stderr := runWrap(t, f, nil, "--root", root, "--explain", "--tasks", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"8 ranks over all 8 GPUs", "node from sysfs", "0-13,112-125", "98-111,210-223", "NCCL_IB_HCA==mlx5_7:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q:\n%s", want, out)
		}
	}
}

// --task-prolog prints what a Slurm TaskProlog needs: export lines for the
// narrowed CUDA_VISIBLE_DEVICES and the NCCL variables, nothing else.
func TestTaskProlog(t *testing.T) {
	root, all := dgxh100(t)
	f := &fakeOS{allowed: all, job: all}
	code, out, stderr := runWrap(t, f, rankEnv(3, 8), "--root", root, "--task-prolog")
	want := "export CUDA_VISIBLE_DEVICES=3\nexport NCCL_IB_HCA==mlx5_3:1\n"
	if code != 0 || out != want || f.execCalls != 0 {
		t.Errorf("exit %d, stdout %q want %q, stderr %q", code, out, want, stderr)
	}
}

// descRoot is a root holding only what the prolog writes for srunwrap:
// /run/gpuprep/node-description.json for the dgxh100 node and the config
// text given, and the boot id. It has no sysfs: a rank that walked it
// would find no GPU.
func descRoot(t *testing.T, cfgText string) string {
	t.Helper()
	shared := testroot.Unpack(t, "dgxh100")
	bootID := "6c3a3a46-0d7f-4a55-b2bd-2a4b6a4c6d2e\n"
	os.MkdirAll(filepath.Join(shared, "proc/sys/kernel/random"), 0o755)
	os.WriteFile(filepath.Join(shared, "proc/sys/kernel/random/boot_id"), []byte(bootID), 0o644)
	cfg, err := config.Parse("site.toml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	set := nodedesc.Settings{Srunwrap: cfg.Srunwrap, NCCL: cfg.NCCL, ConfigFile: cfg.File}
	d, err := nodedesc.Build(host.NewRoot(shared), gpu.OpenProcfs(host.NewRoot(shared)), set, "test")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/sys/kernel/random"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"), []byte(bootID), 0o644)
	if err := nodedesc.Write(host.NewRoot(root), d); err != nil {
		t.Fatal(err)
	}
	return root
}

// With the node description the prolog writes, a rank reads no sysfs and
// no TOML: the description's [nccl] fabrics apply. Local rank 0 prints the
// prolog's notices for the job, the other ranks do not.
func TestDescriptionAndNotices(t *testing.T) {
	_, all := dgxh100(t)
	root := descRoot(t, "[[nccl.fabric]]\nname = \"ib\"\nenv = { NCCL_IB_QPS_PER_CONNECTION = \"4\" }\n")
	if err := nodedesc.WriteNotice(host.NewRoot(root), nodedesc.Notice{Job: 77, Messages: []string{"profile \"benchmark\" is not allowed: running \"default\""}}); err != nil {
		t.Fatal(err)
	}
	for _, rank := range []int{0, 1} {
		f := &fakeOS{allowed: all, job: all}
		_, _, stderr := runWrap(t, f, rankEnv(rank, 8), "--root", root, "--", "python")
		if got := envOf(f.execEnv, "NCCL_IB_QPS_PER_CONNECTION"); got != "4" {
			t.Errorf("rank %d: the description's fabric variable is %q", rank, got)
		}
		if got := envOf(f.execEnv, "CUDA_VISIBLE_DEVICES"); got != fmt.Sprint(rank) {
			t.Errorf("rank %d: CUDA_VISIBLE_DEVICES=%q", rank, got)
		}
		notice := strings.Contains(stderr, `srunwrap: job 77 on dgxh100-01: profile "benchmark" is not allowed`)
		if notice != (rank == 0) {
			t.Errorf("rank %d: notice printed %v; stderr %q", rank, notice, stderr)
		}
	}
}

// withVar is env with name set to val (replacing it).
func withVar(env []string, name, val string) []string {
	out := []string{}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+val)
}

// A task count past what Slurm allows on a node (MaxTasksPerNode, at most
// 65533) is not Slurm's: the command runs unbound after one warning that
// names the variable, and --task-prolog exports nothing, at once. A count
// Slurm allows, and a step over very many nodes, are planned as usual,
// for what one rank costs.
func TestHugeTaskCounts(t *testing.T) {
	root, all := dgxh100(t)
	for _, c := range []struct{ name, tpn, node, local string }{
		{"SLURM_STEP_TASKS_PER_NODE", "100000000", "0", "1"},
		{"SLURM_STEP_TASKS_PER_NODE", "8,3000000", "1", "1"},
		{"SLURM_LOCALID", "", "0", "3000000"},
	} {
		name, v := c.name, fmt.Sprintf("SLURM_STEP_TASKS_PER_NODE=%q SLURM_NODEID=%s SLURM_LOCALID=%s", c.tpn, c.node, c.local)
		env := withVar(withVar(withVar(rankEnv(1, 8), "SLURM_NODEID", c.node), "SLURM_STEP_TASKS_PER_NODE", c.tpn), "SLURM_LOCALID", c.local)
		f := &fakeOS{allowed: all, job: all}
		_, _, stderr := runWrap(t, f, env, "--root", root, "--", "python")
		w := warnings(stderr)
		if f.execCalls != 1 || len(f.applied) != 0 || len(w) != 1 || !strings.HasPrefix(w[0], "srunwrap: warning: "+name+"=") || !strings.Contains(w[0], "unbound") {
			t.Errorf("%s: exec calls %d, plans applied %d, warnings %q: want the command run unbound after one warning naming %s", v, f.execCalls, len(f.applied), w, name)
		}
		f = &fakeOS{allowed: all, job: all}
		code, out, stderr := runWrap(t, f, env, "--root", root, "--task-prolog")
		if w := warnings(stderr); code != 0 || out != "" || len(w) != 1 || !strings.HasPrefix(w[0], "srunwrap: warning: "+name+"=") {
			t.Errorf("%s --task-prolog: exit %d, stdout %q, warnings %q", v, code, out, w)
		}
	}
	for _, c := range []struct{ tpn, node string }{
		{"16(x100000000)", "99999999"},
		{"8,65528", "1"},
	} {
		env := withVar(withVar(rankEnv(1, 8), "SLURM_NODEID", c.node), "SLURM_STEP_TASKS_PER_NODE", c.tpn)
		env = withVar(env, "SLURM_NTASKS", "")
		f := &fakeOS{allowed: all, job: all}
		_, _, stderr := runWrap(t, f, env, "--root", root, "--", "python")
		if f.execCalls != 1 || len(f.applied) != 1 || f.applied[0].GPU == nil || f.applied[0].GPU.Index != 1 {
			t.Errorf("%s on node %s: exec calls %d, plans %+v, stderr %q", c.tpn, c.node, f.execCalls, f.applied, stderr)
		}
	}
	// The largest step Slurm allows costs a rank what 8 ranks do.
	allocs := func(ntasks string) float64 {
		env := withVar(withVar(rankEnv(1, 8), "SLURM_STEP_TASKS_PER_NODE", ntasks), "SLURM_NTASKS", "")
		return testing.AllocsPerRun(2, func() { runWrap(t, &fakeOS{allowed: all, job: all}, env, "--root", root, "--", "python") })
	}
	if few, many := allocs("8"), allocs("65528"); many > few*1.1 {
		t.Errorf("%v allocations for rank 1 of 65528, %v for rank 1 of 8", many, few)
	}
}
