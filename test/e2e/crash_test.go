package e2e

// Crash tests: the prolog and the epilog are killed (SIGKILL) half-way, then
// the node lives on as Slurm would make it, and must end at its exact
// baseline with a clean spool every time.
//
// TestCrashStepKill (crashstep_test.go) kills right before each change a
// hook makes, every one, in every scenario: the hooks built with
// -tags gpuprep_crashpoints kill themselves at the N-th change
// (lib/crashpoint). TestCrashSyscallKill kills the programs as the
// other tests run them (no crash points) at a seeded sample of system
// calls, injected by strace from outside (nothing in gpuprep knows it is
// being tested). TestCrashTimedKill kills at seeded random moments.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/internal/knobsnap"
	"gpuprep/internal/testroot"
	"gpuprep/lib/textfmt"

	"golang.org/x/sys/unix"
)

// crashConfig is hookConfig plus every GPU setting, and the liveness keys
// the crash scenarios rely on: a job whose Slurm cgroup is gone counts as
// dead at once (dead_job_grace = "0s").
const crashConfig = `
[general]
log_file = ""
deadline = "60s"
metrics_dir = ""
dead_job_grace = "0s"
[profiles.default]
cpu_governor = "performance"
energy_performance_preference = "performance"
cstate_max_latency_us = 10
thp_enabled = "never"
thp_defrag = "never"
vm_swappiness = 10
kernel_numa_balancing = 0
gpu_persistence = true
gpu_compute_mode = "exclusive_process"
gpu_power_limit_w = 500
gpu_locked_clocks_mhz = [1980, 1980]
gpu_app_clocks_mhz = { mem = 2619, sm = 1980 }
[profiles.quiet]
inherits = "default"
thp_enabled = "always"
cpu_governor = "powersave"
`

// sysSet is a set of syscalls strace kills at (x86_64 names; a name a
// platform lacks, as open on arm64, is ignored). A set "in the spool" counts
// only the calls on the spool folder (strace -P): its fd or path argument
// is the folder, as for renameat, unlinkat and openat relative to it and
// fsync of it. Those are the journal's and the records' steps, from the
// run's start to its commit, which the counts of all calls reach only by
// chance: strace counts per thread and per syscall, and most calls are the
// knob files' writes.
type sysSet struct {
	name    string
	calls   []string
	inSpool bool
}

var crashSets = []sysSet{
	{"write", []string{"write", "pwrite64"}, false},
	{"rename", []string{"rename", "renameat", "renameat2"}, false},
	{"unlink", []string{"unlink", "unlinkat"}, false},
	{"fsync", []string{"fsync", "fdatasync"}, false},
	{"open", []string{"open", "openat"}, false},
	{"spool-rename", []string{"rename", "renameat", "renameat2"}, true},
	{"spool-unlink", []string{"unlink", "unlinkat"}, true},
	{"spool-fsync", []string{"fsync", "fdatasync"}, true},
	{"spool-open", []string{"open", "openat"}, true},
}

func (s sysSet) expr() string { return "?" + strings.Join(s.calls, ",?") }

// What Slurm runs after a killed hook of job J (then L's epilog, if L runs).
const (
	// prolog J killed:
	followEpilogThenK = "a: epilog J, then K" // Slurm ends the failed job (its epilog runs), the node is resumed, K runs
	followOnlyK       = "b: no epilog J, K"   // J's epilog never runs
	// epilog J killed:
	followK     = "c: K"                    // the node is resumed; the killed epilog is not run again
	followRetry = "d: epilog --job-id J, K" // the admin's documented retry by hand, then K
	followNone  = "none: the hook was not killed"
)

// crashJob is the killed job J's request.
type crashJob struct {
	name, gpus, comment string
}

// The default job asks for a profile that does not exist: it runs with the
// default profile and its user is told why (a notice in the run directory),
// so every kill point also tests that a job's notices go with the job.
var crashJobs = []crashJob{
	{"gpus=0,default", "0", "gpuprep=nosuch"},
	{"gpus=1,2,quiet", "1,2", "gpuprep=quiet"},
}

// scenario is one killed hook: J's prolog or epilog, with or without the
// overlapping job L (GPU 7), whose prolog ran before J's and whose epilog
// runs last.
type scenario struct {
	hook  string // "prolog" or "epilog": the one killed
	job   crashJob
	withL bool
}

func (s scenario) String() string {
	l := "alone"
	if s.withL {
		l = "with-L"
	}
	return s.hook + "/" + s.job.name + "/" + l
}

func (s scenario) follow(i int) string {
	if s.hook == "prolog" {
		return []string{followEpilogThenK, followOnlyK}[i%2]
	}
	return []string{followK, followRetry}[i%2]
}

// crashScenarios are every killed hook, without and with L, for every J.
func crashScenarios() []scenario {
	var out []scenario
	for _, hook := range []string{"prolog", "epilog"} {
		for _, l := range []bool{false, true} {
			for _, j := range crashJobs {
				out = append(out, scenario{hook, j, l})
			}
		}
	}
	return out
}

// needStrace returns strace's path. Without it the test is skipped, except
// on CI (CI=true), where that is a failure.
func needStrace(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("strace")
	if err != nil {
		for _, c := range []string{"/usr/bin/strace", "/bin/strace"} {
			if fi, serr := os.Stat(c); serr == nil && fi.Mode()&0o111 != 0 {
				p, err = c, nil
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("strace not found (Debian package strace; test/install-deps.sh installs it); CI=true makes this a failure")
		}
		t.Skip("strace not found (Debian package strace; run test/install-deps.sh as root)")
	}
	return p
}

// crashNode is a simulated DGX H100 node with Slurm's cgroup v2 tree, a boot
// id, and the snapshot of its baseline after one warm-up job.
type crashNode struct {
	*hookNode
	scope    string            // <root>/sys/fs/cgroup/system.slice/slurmstepd.scope
	base     knobsnap.Snapshot // knob files after the warm-up job
	spoolArc map[string][]byte // the spool after the warm-up job, for repair
	mockArc  map[string][]byte // the mock GPUs' saved settings then, likewise
	nextJob  int
	// cpu is the CPU every hook of the node runs on (taskset), or -1.
	cpu     int
	taskset string
}

// newCrashNode sets up a node whose hooks all run on cpu (-1: anywhere).
func newCrashNode(t *testing.T, cpu int) *crashNode {
	t.Helper()
	n := &crashNode{hookNode: &hookNode{t: t, root: unpackInMemory(t, "dgxh100"),
		spool: filepath.Join(t.TempDir(), "spool"), cfg: filepath.Join(t.TempDir(), "gpuprep.toml")}, nextJob: 100, cpu: -1}
	n.writeGresConf(pciGresConf(t, n.root))
	if cpu >= 0 {
		if p, err := exec.LookPath("taskset"); err == nil {
			n.cpu, n.taskset = cpu, p
		} else {
			t.Logf("no taskset (util-linux): the hooks run on any CPU")
		}
	}
	if err := os.WriteFile(n.cfg, []byte(crashConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	// 32 of the node's 224 CPUs online: the per-CPU knobs cover the online
	// CPUs, so every code path runs with a seventh of the per-CPU sysfs
	// writes (each one a kill point of TestCrashStepKill, and strace
	// stops at each call), and every step can be tried in minutes. The
	// other CPUs' files stay in the snapshot and must stay untouched.
	if err := os.WriteFile(filepath.Join(n.root, "sys/devices/system/cpu/online"), []byte("0-31\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.scope = filepath.Join(n.root, "sys/fs/cgroup/system.slice/slurmstepd.scope")
	if err := os.MkdirAll(n.scope, 0o755); err != nil {
		t.Fatal(err)
	}
	bootID := filepath.Join(n.root, "proc/sys/kernel/random/boot_id")
	if err := os.MkdirAll(filepath.Dir(bootID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bootID, []byte("3f1c2a9e-5b7d-4e20-9c61-8d0e7f4a2b15\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	// One job on every GPU the scenarios use, so that the mock GPUs' saved
	// settings and the spool's baseline exist and belong to the baseline.
	w := n.newJob()
	n.jobStarts(w)
	n.mustRun(t, n.hookCmd("prolog", w, "0,1,2,7", ""), "warm-up prolog")
	n.jobEnds(w)
	n.mustRun(t, n.hookCmd("epilog", w, "0,1,2,7", ""), "warm-up epilog")
	n.base = n.snap()
	if msg := n.spoolProblem() + n.runDirProblem(); msg != "" {
		t.Fatalf("after the warm-up job: %s", msg)
	}
	n.spoolArc = readTree(n.spool)
	n.mockArc = readTree(filepath.Join(n.root, "run/gpuprep-mock"))
	return n
}

// readTree reads every regular file under dir, by relative path.
func readTree(dir string) map[string][]byte {
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, rerr := os.ReadFile(p); rerr == nil {
				rel, _ := filepath.Rel(dir, p)
				files[rel] = b
			}
		}
		return nil
	})
	return files
}

// writeTree makes dir hold exactly files (mode 0700 folders, 0600 files).
func writeTree(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for rel, b := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o700)
}

// unpackInMemory unpacks a fixture root into /dev/shm when there is one
// (else into the test's temporary folder): a real node's knob files are in
// memory too (sysfs, procfs), and the hooks replace a fixture's file through
// a temporary file and a rename, which costs journal writes on a disk.
func unpackInMemory(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "gpuprep-crash-")
	if err != nil {
		return testroot.Unpack(t, name)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	arc, err := testroot.Archive(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(arc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testroot.Extract(f, dir); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return dir
}

func (n *crashNode) newJob() int { n.nextJob++; return n.nextJob }

// pin makes cmd run on the node's CPU. A hook and the strace tracing it on
// one CPU cost about a third less than apart (no wake-ups across CPUs at
// each of its ~25,000 syscall stops); and a hook whose Go runtime sees one
// CPU makes its calls on fewer threads, so that strace's per-thread call
// counts come near the calls' order in the whole run.
func (n *crashNode) pin(cmd *exec.Cmd) *exec.Cmd {
	if n.cpu < 0 {
		return cmd
	}
	cmd.Args = append([]string{"taskset", "-c", strconv.Itoa(n.cpu), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = n.taskset
	return cmd
}

// jobStarts creates the job's cgroup, as slurmd does before the prolog with
// PrologFlags=Contain; jobEnds removes it, as at the job's end (before its
// epilog) or when its prolog failed.
func (n *crashNode) jobStarts(job int) {
	if err := os.Mkdir(filepath.Join(n.scope, fmt.Sprintf("job_%d", job)), 0o755); err != nil {
		n.t.Fatal(err)
	}
}

func (n *crashNode) jobEnds(job int) {
	if err := os.Remove(filepath.Join(n.scope, fmt.Sprintf("job_%d", job))); err != nil && !os.IsNotExist(err) {
		n.t.Fatal(err)
	}
}

// runResult is how a command ended.
type runResult struct {
	code   int  // exit code; -1 when killed by a signal
	killed bool // killed by SIGKILL
	stderr string
}

// runCmd runs cmd in its own process group, with a time limit of two
// minutes (a hang fails the test).
func runCmd(t *testing.T, cmd *exec.Cmd) runResult {
	t.Helper()
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // strace and its tracee, killed together on a hang
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s: still running after 2 minutes: %s", strings.Join(cmd.Args, " "), errb.String())
	}
	return waitResult(t, err, errb.String())
}

func waitResult(t *testing.T, err error, stderr string) runResult {
	t.Helper()
	if err == nil {
		return runResult{stderr: stderr}
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatal(err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return runResult{code: -1, killed: ws.Signal() == syscall.SIGKILL, stderr: stderr}
	}
	return runResult{code: ee.ExitCode(), stderr: stderr}
}

// mustRun runs a hook that must exit 0.
func (n *crashNode) mustRun(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	if r := runCmd(t, n.pin(cmd)); r.code != 0 || r.killed {
		t.Fatalf("%s: exit %d: %s", what, r.code, strings.TrimSpace(r.stderr))
	}
}

// failRun is mustRun for the follow-up runs: it returns the problem instead
// of failing the test.
func (n *crashNode) failRun(t *testing.T, cmd *exec.Cmd, what string) string {
	t.Helper()
	if r := runCmd(t, n.pin(cmd)); r.code != 0 || r.killed {
		return fmt.Sprintf("%s: exit %d: %s", what, r.code, firstLine(r.stderr))
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// retryCmd is the admin's retry: `gpuprep-epilog --job-id J` by hand (the
// hook's environment without SLURM_SCRIPT_CONTEXT).
func (n *crashNode) retryCmd(job int, j crashJob) *exec.Cmd {
	cmd := n.hookCmd("epilog", job, j.gpus, j.comment)
	cmd.Args = append(cmd.Args, "--job-id", strconv.Itoa(job))
	env := cmd.Env[:0:0]
	for _, e := range cmd.Env {
		if !strings.HasPrefix(e, "SLURM_SCRIPT_CONTEXT=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	return cmd
}

// underStrace wraps a hook command in strace with the same environment.
func underStrace(cmd *exec.Cmd, strace string, opts ...string) *exec.Cmd {
	args := append([]string{"strace"}, opts...)
	args = append(args, "--")
	cmd.Args = append(append(args, cmd.Path), cmd.Args[1:]...)
	cmd.Path = strace
	return cmd
}

// killer runs the hook to kill on node n and says whether it was killed.
type killer func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool

// pointResult is one kill point's outcome.
type pointResult struct {
	killed      bool
	killedAgain bool // the first hook after the killed one was killed too (runPointTwice)
	follow      string
	spoolNow    string // what the killed run left in the spool
	problem     string // why the node did not end at its baseline; "" when it did
}

// runPoint runs one scenario: L's prolog (with L), J's prolog when J's
// epilog is the hook killed, the hook killed by kill, what Slurm runs next
// (follow), L's epilog, then checks the node.
func (n *crashNode) runPoint(t *testing.T, sc scenario, follow string, kill killer) pointResult {
	return n.runPointTwice(t, sc, follow, kill, nil)
}

// againKiller runs the first hook after a killed one (cmd, named what)
// and kills it again, or not: it says whether it did, and why the run
// failed when it ended otherwise ("" when it exited 0).
type againKiller func(t *testing.T, n *crashNode, cmd *exec.Cmd, what string) (killed bool, problem string)

// runPointTwice is runPoint where again, when not nil, runs the first hook
// after the killed one (epilog J, the admin's retry, or K's prolog) and
// may kill it too. A killed prolog of K fails K like J's: its epilog runs
// when J's killed hook was the epilog (follow-up c), not otherwise
// (follow-up b, where J's epilog did not run either); then job K2 runs.
func (n *crashNode) runPointTwice(t *testing.T, sc scenario, follow string, kill killer, again againKiller) pointResult {
	t.Helper()
	n.t = t
	var r pointResult
	l := 0
	if sc.withL {
		l = n.newJob()
		n.jobStarts(l)
		n.mustRun(t, n.hookCmd("prolog", l, "7", ""), "prolog L")
	}
	j := n.newJob()
	n.jobStarts(j)
	if sc.hook == "epilog" {
		n.mustRun(t, n.hookCmd("prolog", j, sc.job.gpus, sc.job.comment), "prolog J")
		n.jobEnds(j)
	}
	r.killed = kill(t, n, n.hookCmd(sc.hook, j, sc.job.gpus, sc.job.comment))
	r.spoolNow = n.spoolSummary()
	var problems []string
	note := func(p string) {
		if p != "" {
			problems = append(problems, p)
		}
	}
	// next runs a hook after the killed one; the first of them under
	// again, when set. It says whether again killed it.
	first := true
	next := func(cmd *exec.Cmd, what string) bool {
		if first && again != nil {
			first = false
			killed, problem := again(t, n, cmd, what)
			note(problem)
			r.killedAgain = killed
			return killed
		}
		first = false
		note(n.failRun(t, cmd, what))
		return false
	}
	switch {
	case !r.killed:
		// The hook ran to its end (exit 0 checked by kill): finish J's life.
		r.follow = followNone
		if sc.hook == "prolog" {
			n.jobEnds(j)
			note(n.failRun(t, n.hookCmd("epilog", j, sc.job.gpus, sc.job.comment), "epilog J"))
		}
	case sc.hook == "prolog":
		r.follow = follow
		n.jobEnds(j) // the job failed: Slurm ends it
		if follow == followEpilogThenK {
			next(n.hookCmd("epilog", j, sc.job.gpus, sc.job.comment), "epilog J")
		}
	default:
		r.follow = follow
		if follow == followRetry {
			next(n.retryCmd(j, sc.job), "gpuprep-epilog --job-id J")
		}
	}
	if r.killed {
		k := n.newJob()
		n.jobStarts(k)
		killedK := next(n.hookCmd("prolog", k, sc.job.gpus, ""), "prolog K")
		n.jobEnds(k)
		if !killedK || follow == followK {
			note(n.failRun(t, n.hookCmd("epilog", k, sc.job.gpus, ""), "epilog K"))
		}
		if killedK {
			k2 := n.newJob()
			n.jobStarts(k2)
			note(n.failRun(t, n.hookCmd("prolog", k2, sc.job.gpus, ""), "prolog K2"))
			n.jobEnds(k2)
			note(n.failRun(t, n.hookCmd("epilog", k2, sc.job.gpus, ""), "epilog K2"))
		}
	}
	if sc.withL {
		n.jobEnds(l)
		note(n.failRun(t, n.hookCmd("epilog", l, "7", ""), "epilog L"))
	}
	if d := n.snap().Diff(n.base, 6); len(d) != 0 {
		note("not at baseline: " + strings.Join(d, "; "))
	}
	note(n.spoolProblem())
	note(n.runDirProblem())
	if len(problems) > 0 {
		r.problem = strings.Join(problems, " | ")
		n.repair()
	}
	return r
}

// repair puts the node back at its baseline after a failed point, so that
// the next points test something: knob files from the baseline snapshot
// (a key "file#field" is a field of a mock GPU's file: those files are put
// back whole), the spool and the mock GPUs' files as after the warm-up job,
// no job cgroups.
func (n *crashNode) repair() {
	now := n.snap()
	for key := range now {
		if _, ok := n.base[key]; !ok && !strings.Contains(key, "#") && !strings.HasPrefix(key, "run/") {
			os.Remove(filepath.Join(n.root, key))
		}
	}
	for key, v := range n.base {
		if now[key] != v && !strings.Contains(key, "#") && !strings.HasPrefix(key, "run/") {
			if err := os.WriteFile(filepath.Join(n.root, key), []byte(v), 0o644); err != nil {
				n.t.Fatalf("repair: %v", err)
			}
		}
	}
	if err := writeTree(filepath.Join(n.root, "run/gpuprep-mock"), n.mockArc); err != nil {
		n.t.Fatalf("repair: %v", err)
	}
	if err := writeTree(n.spool, n.spoolArc); err != nil {
		n.t.Fatalf("repair: %v", err)
	}
	// What a job left in the run directory (runDirProblem); the next
	// prolog makes jobs/ again.
	os.RemoveAll(filepath.Join(n.root, "run/gpuprep/jobs"))
	os.RemoveAll(filepath.Join(n.root, "run/gpuprep/mps"))
	jobs, _ := filepath.Glob(filepath.Join(n.scope, "job_*"))
	for _, j := range jobs {
		os.Remove(j)
	}
	if d := n.snap().Diff(n.base, 3); len(d) != 0 {
		n.t.Fatalf("repair: still not at baseline: %v", d)
	}
}

// spoolSummary says what a killed run left in the spool: journal, job
// records, temporary files (names starting with ".").
func (n *crashNode) spoolSummary() string {
	ents, _ := os.ReadDir(n.spool)
	var what []string
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		var k string
		switch {
		case name == "journal.json":
			k = "journal"
		case strings.HasPrefix(name, "job-") && strings.HasSuffix(name, ".json"):
			k = "job-record"
		case strings.HasPrefix(name, "."):
			k = "temp-file"
		}
		if k != "" && !seen[k] {
			seen[k] = true
			what = append(what, k)
		}
	}
	sort.Strings(what)
	if len(what) == 0 {
		return "nothing"
	}
	return strings.Join(what, "+")
}

// spoolProblem says what is wrong with the spool of a node no job runs on:
// a journal, a job record, a file whose name starts with "." (temporary
// files of killed runs must be swept, the job evidence's included), a job
// evidence record still "running", holders in node.json (read loosely:
// its format may change; "holders" is optional); "" when nothing is.
func (n *crashNode) spoolProblem() string {
	var bad []string
	filepath.WalkDir(n.spool, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == n.spool {
			return nil
		}
		name := d.Name()
		rel, _ := filepath.Rel(n.spool, p)
		switch {
		case name == "journal.json":
			bad = append(bad, rel+": journal left behind")
		case strings.HasPrefix(name, "job-") && strings.HasSuffix(name, ".json"):
			bad = append(bad, rel+": job record left")
		case strings.HasPrefix(name, "."):
			bad = append(bad, rel+": temporary file left")
		case strings.HasPrefix(rel, "jobs/") && runningRecord(p):
			bad = append(bad, rel+": job evidence left running")
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(n.spool, "node.json")); err == nil {
		var st map[string]json.RawMessage
		if err := json.Unmarshal(b, &st); err != nil {
			bad = append(bad, "node.json unreadable: "+err.Error())
		} else if h, ok := st["holders"]; ok {
			var v any
			if json.Unmarshal(h, &v) != nil || !emptyJSON(v) {
				bad = append(bad, "node.json holders left: "+textfmt.Clip(string(h), 200))
			}
		}
	} else if !os.IsNotExist(err) {
		bad = append(bad, "node.json: "+err.Error())
	}
	if jobs, _ := filepath.Glob(filepath.Join(n.scope, "job_*")); len(jobs) > 0 {
		bad = append(bad, fmt.Sprintf("test bug: job cgroups left: %v", jobs))
	}
	return strings.Join(bad, "; ")
}

// runDirProblem says what is wrong with the run directory
// (<root>/run/gpuprep) of a node no job runs on: a job's notices for
// srunwrap (jobs/<id>), a temporary file of a killed write, an MPS
// daemon's directory; "" when nothing is.
func (n *crashNode) runDirProblem() string {
	dir := filepath.Join(n.root, "run/gpuprep")
	var bad []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case strings.Contains(d.Name(), ".tmp-"):
			bad = append(bad, "run/gpuprep/"+rel+": temporary file left")
		case strings.HasPrefix(rel, "jobs/"):
			bad = append(bad, "run/gpuprep/"+rel+": a job's notices left")
		case strings.HasPrefix(rel, "mps/"):
			bad = append(bad, "run/gpuprep/"+rel+": an MPS daemon's directory left")
		}
		return nil
	})
	return strings.Join(bad, "; ")
}

// runningRecord says whether the job evidence record at p says its job
// still runs: on a node no job runs on, every record must have ended.
func runningRecord(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var r struct {
		Running bool `json:"running"`
	}
	return json.Unmarshal(b, &r) == nil && r.Running
}

// emptyJSON says whether v holds no holder: null, "", 0, false, or lists
// and objects of those.
func emptyJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case []any:
		for _, e := range v {
			if !emptyJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !emptyJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// straceOpts are the options of every strace run; strace counts `when` per
// traced thread and per syscall. Not --seccomp-bpf, although it would stop
// the hook only at the traced syscalls (without it strace stops it at each
// of its ~25,000 calls, several times slower): with it, strace 6.1 (Debian
// 12) injects a signal only at the first call of a thread other than the
// main one; with when=2 or more, or in the main thread, it never kills.
var straceOpts = []string{"-f", "-qq"}

// straceKill kills at the when-th call of set.
func straceKill(strace string, set sysSet, when int) killer {
	return func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
		t.Helper()
		e, name := set.expr(), filepath.Base(cmd.Path)
		opts := append(slices.Clone(straceOpts), "-o", "/dev/null", "-e", "trace="+e,
			"-e", fmt.Sprintf("inject=%s:signal=KILL:when=%d", e, when))
		if set.inSpool {
			opts = append(opts, "-P", n.spool)
		}
		r := runCmd(t, n.pin(underStrace(cmd, strace, opts...)))
		if !r.killed && r.code != 0 {
			t.Fatalf("%s under strace (kill at %s call %d): exit %d: %s", name, set.name, when, r.code, strings.TrimSpace(r.stderr))
		}
		return r.killed
	}
}

var traceLine = regexp.MustCompile(`^(\d+)\s+([a-z0-9_]+)\(`)

// callDepth is what a plain traced run of the hook did, per syscall set:
// the most calls of one syscall in one thread (the highest `when` that can
// fire), and the calls in all.
type callDepth struct{ depth, total int }

// countCalls runs the scenario twice with the hook traced (no kill): once
// for all calls, once for the calls on the spool folder; and counts its
// calls per set. These runs inject nothing, so they use --seccomp-bpf:
// strace stops the hook at the counted calls only.
func (n *crashNode) countCalls(t *testing.T, strace string, sc scenario) map[string]callDepth {
	t.Helper()
	var all []string
	for _, s := range crashSets {
		if !s.inSpool {
			all = append(all, s.calls...)
		}
	}
	res := map[string]callDepth{}
	for _, inSpool := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "trace")
		count := func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
			opts := append(slices.Clone(straceOpts), "--seccomp-bpf", "-o", out, "-e", "trace=?"+strings.Join(all, ",?"))
			if inSpool {
				opts = append(opts, "-P", n.spool)
			}
			r := runCmd(t, n.pin(underStrace(cmd, strace, opts...)))
			if r.code != 0 || r.killed {
				t.Fatalf("%s traced: exit %d: %s", sc, r.code, strings.TrimSpace(r.stderr))
			}
			return false
		}
		if r := n.runPoint(t, sc, followNone, count); r.problem != "" {
			t.Fatalf("%s, not killed: %s", sc, r.problem)
		}
		per := countTrace(t, out)
		for _, s := range crashSets {
			if s.inSpool != inSpool {
				continue
			}
			var d callDepth
			for k, c := range per {
				_, call, _ := strings.Cut(k, " ")
				if slices.Contains(s.calls, call) {
					d.total += c
					d.depth = max(d.depth, c)
				}
			}
			res[s.name] = d
		}
	}
	return res
}

// countTrace counts the calls in strace's output per thread and syscall
// ("tid syscall").
func countTrace(t *testing.T, file string) map[string]int {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	per := map[string]int{}
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		if m := traceLine.FindStringSubmatch(lines.Text()); m != nil {
			per[m[1]+" "+m[2]]++
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return per
}

// crashSeed draws the calls TestCrashSyscallKill kills at. It is fixed, so
// that every run of one commit tries the same points and a failure belongs
// to the commit, not to the day; GPUPREP_CRASH_SEED=<n> draws others (the
// seed is logged, and a failing point is named by scenario, set and call).
// The points drawn are a sample: TestCrashStepKill kills before every
// change, each run; this test checks the programs as built for production
// against the same scenarios, killed from outside at system calls,
// including calls no crash point marks.
const crashSeed = 20261202

// crashSeedNow is crashSeed, or GPUPREP_CRASH_SEED when set.
func crashSeedNow(t *testing.T) int64 {
	t.Helper()
	v := os.Getenv("GPUPREP_CRASH_SEED")
	if v == "" {
		return crashSeed
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("GPUPREP_CRASH_SEED=%q: %v", v, err)
	}
	return n
}

// samplePoint is one strace kill point: the when-th call of a set.
type samplePoint struct {
	set  sysSet
	when int
}

// samplePoints are the kill points of scenario i (of nsc): one per
// syscall set. Set j is killed at its first call in scenario (nsc-j%nsc)
// %nsc, so that each set kills in one scenario at least, whatever the
// threads do (the first call of any thread fires). Elsewhere the call is
// drawn from 2 up to two thirds of the most calls one thread made (strace
// counts per thread, and a thread's count varies by a third from run to
// run: a point past this run's count kills nothing, and is reported as
// such), or for a set in the spool up to all its calls. With -short, only
// the first calls.
func samplePoints(rng *rand.Rand, i, nsc int, depths map[string]callDepth, short bool) []samplePoint {
	var ps []samplePoint
	for j, set := range crashSets {
		d := depths[set.name]
		if d.total == 0 {
			continue
		}
		if (i+j)%nsc == 0 {
			ps = append(ps, samplePoint{set, 1})
			continue
		}
		if short {
			continue
		}
		reach := max(2, d.depth*2/3)
		if set.inSpool {
			reach = max(2, d.total)
		}
		ps = append(ps, samplePoint{set, 2 + rng.Intn(reach-1)})
	}
	return ps
}

// crashStats counts one scenario's kill points.
type crashStats struct {
	tried, killed int
	perSet        map[string][2]int // set -> killed, tried
	perFollow     map[string]int
	left          map[string]int // what killed runs left in the spool
	failures      map[string][]string
}

func newCrashStats() *crashStats {
	return &crashStats{perSet: map[string][2]int{}, perFollow: map[string]int{}, left: map[string]int{}, failures: map[string][]string{}}
}

func (s *crashStats) add(set string, r pointResult, where string) {
	s.tried++
	ks := s.perSet[set]
	ks[1]++
	if r.killed {
		s.killed++
		ks[0]++
		s.left[r.spoolNow]++
	}
	s.perSet[set] = ks
	s.perFollow[r.follow]++
	if r.problem != "" {
		s.failures[r.follow] = append(s.failures[r.follow], where+": "+r.problem)
	}
}

func (s *crashStats) report(t *testing.T, name string) {
	t.Helper()
	var sets, follows, left []string
	names := make([]string, 0, len(s.perSet))
	for name := range s.perSet {
		names = append(names, name)
	}
	order := func(name string) int {
		return slices.IndexFunc(crashSets, func(c sysSet) bool { return c.name == name })
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := order(a) - order(b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		ks := s.perSet[name]
		sets = append(sets, fmt.Sprintf("%s %d/%d", name, ks[0], ks[1]))
	}
	for f, c := range s.perFollow {
		follows = append(follows, fmt.Sprintf("[%s] %d", f, c))
	}
	for k, c := range s.left {
		left = append(left, fmt.Sprintf("%s %d", k, c))
	}
	sort.Strings(follows)
	sort.Strings(left)
	t.Logf("%s: %d kill points, %d killed (%s); follow-ups: %s; after the kill the spool held: %s",
		name, s.tried, s.killed, strings.Join(sets, ", "), strings.Join(follows, ", "), strings.Join(left, ", "))
	var fs []string
	for f := range s.failures {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		list := s.failures[f]
		t.Errorf("%s, follow-up [%s]: %d of %d points did not end at the baseline; first: %s",
			name, f, len(list), s.perFollow[f], strings.Join(list[:min(3, len(list))], "\n\t"))
	}
}

// TestCrashSyscallKill kills the prolog and the epilog, as built for the
// tests (no crash points), with SIGKILL at a system call injected by
// strace from outside (write, rename, unlink, fsync, open; anywhere, and
// on the spool folder), in each scenario: one point per scenario and set,
// drawn with crashSeed (72 points; with -short, 9). It follows each kill
// with what Slurm runs next, and checks that the node ends at its exact
// baseline (GPU settings included) with a clean spool. Each set must kill
// at least once: otherwise strace's injection does not work here. The
// scenarios are shared out to simulated nodes that run in parallel (two,
// or one per CPU up to one per scenario), each pinned to one CPU.
func TestCrashSyscallKill(t *testing.T) {
	t.Parallel()
	strace := needStrace(t)
	bin(t, "gpuprep-prolog")
	seed := crashSeedNow(t)
	scs := crashScenarios()
	nodes := min(len(scs), max(2, runtime.GOMAXPROCS(0)))
	start := time.Now()
	stats := make([]*crashStats, len(scs))
	onCrashNodes(t, nodes, func(t *testing.T, i int, n *crashNode) {
		for k := i; k < len(scs); k += nodes {
			sc := scs[k]
			t.Run(strings.ReplaceAll(sc.String(), "/", "_"), func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed + int64(k)))
				stats[k] = n.runScenario(t, strace, sc, k, len(scs), rng)
			})
			n.t = t
		}
	})
	killed, tried := 0, 0
	perSet := map[string]int{}
	for _, s := range stats {
		if s != nil {
			killed += s.killed
			tried += s.tried
			for set, ks := range s.perSet {
				perSet[set] += ks[0]
			}
		}
	}
	if !t.Failed() {
		for _, set := range crashSets {
			if perSet[set.name] == 0 {
				t.Errorf("no kill point at %s calls killed the hook: strace's signal injection does not work here", set.name)
			}
		}
	}
	t.Logf("%d of %d kill points (seed %d) killed the hook, on %d nodes, in %v", killed, tried, seed, nodes, time.Since(start).Round(time.Second))
}

// allowedCPUs are the CPUs this test may run on (sched_getaffinity), or
// none when that cannot be read.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// onCrashNodes runs work on nodes simulated nodes in parallel (subtests
// nodes/node<i>), node i pinned to one of the CPUs this test may use (the
// i-th, round robin), so that the nodes' hooks do not slow each other.
func onCrashNodes(t *testing.T, nodes int, work func(t *testing.T, i int, n *crashNode)) {
	cpus := allowedCPUs()
	t.Run("nodes", func(t *testing.T) {
		for i := range nodes {
			t.Run(fmt.Sprintf("node%d", i), func(t *testing.T) {
				t.Parallel()
				cpu := -1
				if len(cpus) > 0 {
					cpu = cpus[i%len(cpus)]
				}
				work(t, i, newCrashNode(t, cpu))
			})
		}
	})
}

// runScenario counts the scenario's calls (sc is scenario i of nsc), then
// kills its hook at its sample of points, and reports.
func (n *crashNode) runScenario(t *testing.T, strace string, sc scenario, i, nsc int, rng *rand.Rand) *crashStats {
	n.t = t
	depths := n.countCalls(t, strace, sc)
	var ds []string
	for _, s := range crashSets {
		d := depths[s.name]
		ds = append(ds, fmt.Sprintf("%s %d (%d in all)", s.name, d.depth, d.total))
		if d.total == 0 {
			t.Errorf("%s: a traced run made no %s call", sc, s.name)
		}
	}
	t.Logf("%s: calls per thread and syscall, at most: %s", sc, strings.Join(ds, ", "))
	st := newCrashStats()
	for x, p := range samplePoints(rng, i, nsc, depths, testing.Short()) {
		r := n.runPoint(t, sc, sc.follow(x), straceKill(strace, p.set, p.when))
		st.add(p.set.name, r, fmt.Sprintf("%s call %d", p.set.name, p.when))
	}
	st.report(t, sc.String())
	return st
}

// TestCrashTimedKill kills the prolog and the epilog at seeded random
// moments (about 40 kills, 10 with -short) in the same scenarios, and checks
// the same as TestCrashSyscallKill.
func TestCrashTimedKill(t *testing.T) {
	t.Parallel()
	want := 40
	if testing.Short() {
		want = 10
	}
	n := newCrashNode(t, -1)
	scs := crashScenarios()
	// How long a run takes here: the kills land within it.
	dur := map[string]time.Duration{}
	for _, hook := range []string{"prolog", "epilog"} {
		sc := scenario{hook: hook, job: crashJobs[1]}
		timeIt := func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
			t0 := time.Now()
			if r := runCmd(t, n.pin(cmd)); r.code != 0 || r.killed {
				t.Fatalf("%s: exit %d: %s", hook, r.code, r.stderr)
			}
			dur[hook] = time.Since(t0)
			return false
		}
		if r := n.runPoint(t, sc, followNone, timeIt); r.problem != "" {
			t.Fatal(r.problem)
		}
	}
	rng := rand.New(rand.NewSource(20261201))
	st := map[string]*crashStats{}
	kills := 0
	for try := 0; kills < want; try++ {
		if try > 20*want {
			t.Fatalf("only %d timed kills landed in %d tries", kills, try)
		}
		sc := scs[rng.Intn(len(scs))]
		delay := time.Duration(rng.Int63n(int64(dur[sc.hook]*6/5) + 1))
		timed := func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
			var errb bytes.Buffer
			cmd = n.pin(cmd)
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			cmd.Process.Kill()
			r := waitResult(t, cmd.Wait(), errb.String())
			if !r.killed && r.code != 0 {
				t.Fatalf("%s: exit %d: %s", sc, r.code, r.stderr)
			}
			return r.killed
		}
		r := n.runPoint(t, sc, sc.follow(kills), timed)
		if st[sc.String()] == nil {
			st[sc.String()] = newCrashStats()
		}
		st[sc.String()].add("timed", r, fmt.Sprintf("try %d, kill after %v", try, delay.Round(time.Microsecond)))
		if r.killed {
			kills++
		}
	}
	names := make([]string, 0, len(st))
	for k := range st {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		st[k].report(t, k)
	}
	t.Logf("%d timed kills (runs take %v prolog, %v epilog here)", kills, dur["prolog"].Round(time.Millisecond), dur["epilog"].Round(time.Millisecond))
}
