package e2e

// TestCrashStepKill: the hook killed (SIGKILL) right before each change it
// makes, one run per change, every change of each scenario. The hooks are
// built with -tags gpuprep_crashpoints, in which lib/crashpoint counts
// the changes (knob writes, the spool's creates, writes, renames, unlinks
// and appends, /run/gpuprep's folders and files, cgroup sets) and
// GPUPREP_CRASH_AT=N makes the process send itself SIGKILL at the N-th.

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gpuprep/internal/testroot"
)

var (
	crashBinsOnce sync.Once
	crashBinsDir  string
	crashBinsErr  error
)

// crashBin builds gpuprep-prolog and gpuprep-epilog once per test run with
// -tags gpuprep_mock,gpuprep_crashpoints, next to bin's programs (TestMain
// removes them), and returns the path of one.
func crashBin(t *testing.T, name string) string {
	t.Helper()
	crashBinsOnce.Do(func() {
		root, err := testroot.ModuleRoot()
		if err != nil {
			crashBinsErr = err
			return
		}
		crashBinsDir = filepath.Join(filepath.Dir(bin(t, "gpuprep-prolog")), "crashpoints")
		for out, pkg := range map[string]string{"gpuprep-prolog": "./prolog", "gpuprep-epilog": "./epilog"} {
			cmd := exec.Command("go", "build", "-tags", "gpuprep_mock,gpuprep_crashpoints", "-o", filepath.Join(crashBinsDir, out), pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
			if b, err := cmd.CombinedOutput(); err != nil {
				crashBinsErr = &buildError{pkg + " (-tags gpuprep_crashpoints)", err, string(b)}
				return
			}
		}
	})
	if crashBinsErr != nil {
		t.Fatal(crashBinsErr)
	}
	return filepath.Join(crashBinsDir, name)
}

// withCrashpoints makes a hook command run the crashpoints build of its
// program, with extra environment variables.
func withCrashpoints(t *testing.T, cmd *exec.Cmd, env ...string) *exec.Cmd {
	t.Helper()
	cmd.Path = crashBin(t, filepath.Base(cmd.Path))
	cmd.Args[0] = cmd.Path
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// crashStep is one change a hook run made: its number, what and where.
type crashStep struct {
	n        int
	op, path string
}

func (s crashStep) String() string { return fmt.Sprintf("step %d (%s %s)", s.n, s.op, s.path) }

// countSteps runs the scenario with its hook not killed, and returns the
// changes the hook made, in order.
func (n *crashNode) countSteps(t *testing.T, sc scenario) []crashStep {
	t.Helper()
	log := filepath.Join(t.TempDir(), "steps")
	count := func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
		if r := runCmd(t, n.pin(withCrashpoints(t, cmd, "GPUPREP_CRASH_LOG="+log))); r.code != 0 || r.killed {
			t.Fatalf("%s, crashpoints build, not killed: exit %d: %s", sc, r.code, strings.TrimSpace(r.stderr))
		}
		return false
	}
	if r := n.runPoint(t, sc, followNone, count); r.problem != "" {
		t.Fatalf("%s, crashpoints build, not killed: %s", sc, r.problem)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatalf("%s: the crashpoints build logged no step: %v", sc, err)
	}
	defer f.Close()
	var steps []crashStep
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		num, rest, _ := strings.Cut(lines.Text(), " ")
		op, path, _ := strings.Cut(rest, " ")
		k, err := strconv.Atoi(num)
		if err != nil || k != len(steps)+1 {
			t.Fatalf("%s: step log line %q (want step %d)", sc, lines.Text(), len(steps)+1)
		}
		if rest, ok := strings.CutPrefix(path, n.spool); ok {
			path = "<spool>" + rest
		} else if rest, ok := strings.CutPrefix(path, n.root); ok {
			path = "<root>" + rest
		}
		steps = append(steps, crashStep{k, op, path})
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// stepKill kills the hook right before its k-th change. k = len(steps)+1
// is the hook killed after its last change, before it exits: the run
// ends normally, and the node goes on as if it had been killed (Slurm
// sees a failed hook, with all of its work done).
func stepKill(sc scenario, k, count int) killer {
	return func(t *testing.T, n *crashNode, cmd *exec.Cmd) bool {
		t.Helper()
		r := runCmd(t, n.pin(withCrashpoints(t, cmd, "GPUPREP_CRASH_AT="+strconv.Itoa(k))))
		switch {
		case r.killed:
			return true
		case r.code != 0:
			t.Fatalf("%s, kill at step %d: exit %d: %s", sc, k, r.code, strings.TrimSpace(r.stderr))
		case k <= count:
			t.Errorf("%s: the run to kill at step %d of %d ended without reaching it: the hook's changes differ from run to run, so some were not tried", sc, k, count)
		}
		return k > count
	}
}

// againAt kills the hook it runs right before its m-th change; a run
// that makes fewer changes ends normally (exit 0, else that is the
// problem).
func againAt(m int) againKiller {
	return func(t *testing.T, n *crashNode, cmd *exec.Cmd, what string) (bool, string) {
		t.Helper()
		r := runCmd(t, n.pin(withCrashpoints(t, cmd, "GPUPREP_CRASH_AT="+strconv.Itoa(m))))
		if !r.killed && r.code != 0 {
			return false, fmt.Sprintf("%s (to be killed at its step %d): exit %d: %s", what, m, r.code, firstLine(r.stderr))
		}
		return r.killed, ""
	}
}

// crashTwice is the number of kill points per scenario of
// TestCrashStepKill where the first hook after the killed one (the
// recovery) is killed too: the hook at a step drawn with crashSeed, the
// next one at a step drawn up to three past that one (its first changes
// undo the killed run's: it rolls back what the killed hook's journal
// lists, about one change per change the killed hook made).
const crashTwice = 8

// crashOpsRequired are the kinds of change the scenarios' hooks make (the
// op of lib/crashpoint's Hit): knob writes, the spool's atomic
// replacements (create, write, rename), removals and lock, and the node
// description's and the job notices' in /run/gpuprep.
var crashOpsRequired = []string{"write", "spool-create", "spool-write", "spool-rename", "spool-unlink", "spool-lock",
	"run-mkdir", "run-create", "run-write", "run-rename", "run-unlink"}

// opCounts says how many changes of each kind ops holds ("write 96,
// spool-rename 4").
func opCounts(ops []string) string {
	n := map[string]int{}
	for _, op := range ops {
		n[op]++
	}
	var out []string
	for op, c := range n {
		out = append(out, fmt.Sprintf("%s %d", op, c))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// stepPoint is one kill point of TestCrashStepKill.
type stepPoint struct {
	sc    int // index in crashScenarios
	k     int
	again int // > 0: the next hook is killed too, before its again-th change
	steps []crashStep
}

// TestCrashStepKill kills the prolog and the epilog with SIGKILL right
// before each change they make (every knob write, every spool and
// /run/gpuprep change), and after the last one, in every scenario of
// TestCrashSyscallKill, follows each kill with what Slurm runs next, and
// checks that the node ends at its exact baseline with a clean spool. In
// crashTwice more points per scenario the first hook after the killed
// one is killed too, half-way through its recovery. With -short, every
// fifth step and one point killed twice per scenario. The kill points are
// shared out to simulated nodes running in parallel (one per CPU, at
// least two), each pinned to one CPU: a node counts a scenario's steps
// when no point is waiting, so that no node waits for another.
func TestCrashStepKill(t *testing.T) {
	t.Parallel()
	crashBin(t, "gpuprep-prolog")
	stride, twice := 1, crashTwice
	if testing.Short() {
		stride, twice = 5, 1
	}
	seed := crashSeedNow(t)
	scs := crashScenarios()
	nodes := min(len(scs), max(2, runtime.GOMAXPROCS(0)))
	start := time.Now()

	var mu sync.Mutex
	stats := make([]*crashStats, len(scs))
	counts := make([]int, len(scs))
	ops := make([][]string, len(scs))
	var queue []stepPoint
	nextSc := 0
	// take returns the next kill point, or a scenario to count first
	// (sc >= 0), or neither when all is done.
	take := func() (p stepPoint, sc int, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(queue) > 0 {
			p, queue = queue[0], queue[1:]
			return p, -1, true
		}
		if nextSc < len(scs) {
			nextSc++
			return p, nextSc - 1, true
		}
		return p, -1, false
	}
	onCrashNodes(t, nodes, func(t *testing.T, _ int, n *crashNode) {
		for {
			p, sc, ok := take()
			if !ok {
				return
			}
			if sc >= 0 {
				steps := n.countSteps(t, scs[sc])
				if len(steps) == 0 {
					t.Errorf("%s: the hook made no change", scs[sc])
				}
				mu.Lock()
				counts[sc] = len(steps)
				for _, st := range steps {
					ops[sc] = append(ops[sc], st.op)
				}
				stats[sc] = newCrashStats()
				for k := 1; k <= len(steps)+1; k++ {
					if k%stride == 1%stride || k == len(steps)+1 {
						queue = append(queue, stepPoint{sc, k, 0, steps})
					}
				}
				rng := rand.New(rand.NewSource(seed + int64(sc)))
				for range min(twice, len(steps)) {
					k := 1 + rng.Intn(len(steps))
					queue = append(queue, stepPoint{sc, k, 1 + rng.Intn(k+3), steps})
				}
				mu.Unlock()
				continue
			}
			s := scs[p.sc]
			set, where := "after-last", fmt.Sprintf("killed after the last step (%d)", len(p.steps))
			if p.k <= len(p.steps) {
				st := p.steps[p.k-1]
				set, where = st.op, "killed before "+st.String()
			}
			if p.again == 0 {
				r := n.runPoint(t, s, s.follow(p.k), stepKill(s, p.k, len(p.steps)))
				mu.Lock()
				stats[p.sc].add(set, r, where)
				mu.Unlock()
				continue
			}
			// The other follow-up than the single kill's at
			// step k: each step's two meet the second kill.
			r := n.runPointTwice(t, s, s.follow(p.k+1), stepKill(s, p.k, len(p.steps)), againAt(p.again))
			set = "twice"
			where += fmt.Sprintf(", then the next hook before its step %d", p.again)
			if !r.killedAgain {
				set, where = "twice (2nd not reached)", where+" (it made fewer changes)"
			}
			mu.Lock()
			stats[p.sc].add(set, r, where)
			mu.Unlock()
		}
	})
	changes, killed, tried, twiceKilled := 0, 0, 0, 0
	seen := map[string]bool{}
	for i, s := range stats {
		if s == nil {
			continue
		}
		t.Logf("%s: %d changes (%s)", scs[i], counts[i], opCounts(ops[i]))
		for _, op := range ops[i] {
			seen[op] = true
		}
		s.report(t, scs[i].String())
		changes += counts[i]
		killed += s.killed
		tried += s.tried
		twiceKilled += s.perSet["twice"][0]
	}
	// A step kind no scenario reaches is a crash point lost (a Hit call
	// removed, or the change moved out of the function that holds it).
	if !t.Failed() && !testing.Short() {
		for _, op := range crashOpsRequired {
			if !seen[op] {
				t.Errorf("no scenario's hook made a %q change: its crash point is gone (those changes are no kill point any more), or no scenario makes such a change now (then take it out of crashOpsRequired)", op)
			}
		}
	}
	t.Logf("%d of %d kill points killed the hook: before each of the %d changes of %d scenarios and after the last, and %d killed twice; on %d nodes, in %v",
		killed, tried, changes, len(scs), twiceKilled, nodes, time.Since(start).Round(time.Second))
}
