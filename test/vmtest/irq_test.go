package vmtest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/irq"
	"gpuprep/test/vmnode"
)

// irq_affinity on a real kernel (Debian's, under TCG): the VM has no GPU
// or HCA, so every IRQ is an "other" IRQ, and with housekeeping CPUs 0,2
// each one that may run on the job CPUs 1 or 3 goes to 0,2 while a job
// runs. The kernel decides which IRQs it lets move (managed virtio-blk
// queues, the timer: refused), /proc/irq/<n>/ says where each is, and
// irqbalance (Debian's 1.9) runs with and without gpuprep's policy script.

// irqConfig is hkConfig with irq_affinity.
const irqConfig = hkConfig + "irq_affinity = true\n"

// irqHousekeeping and irqJobCPUs are the VM's housekeeping CPUs (one core
// per NUMA node) and the CPUs jobs run on.
var (
	irqHousekeeping = cpuset.MustParse(hkCPUs)
	irqJobCPUs      = cpuset.MustParse("1,3")
)

// irqPolicyScript is where `make install PREFIX=/usr/local` (InstallGpuprep)
// puts gpuprep's irqbalance policy script.
const irqPolicyScript = "/usr/local/lib/gpuprep/irqbalance-policy"

// irqbalanceUnit is the transient unit the scenario runs irqbalance in,
// with the sandbox of Debian's irqbalance.service.
const irqbalanceUnit = "gpuprep-test-irqbalance.service"

// irqState is one IRQ as /proc says: smp_affinity_list, the mode of that
// file, effective_affinity_list, and, for an IRQ /proc/interrupts lists
// (one with a handler), its interrupts on all CPUs.
type irqState struct {
	affinity, effective cpuset.Set
	writable            bool
	active              bool
	count               uint64
}

// readIRQs reads every /proc/irq/<n>/ and /proc/interrupts.
func readIRQs(t *testing.T, ctx context.Context) map[int]irqState {
	t.Helper()
	out := MustRun(t, ctx, `cd /proc/irq && for n in [0-9]*; do
	echo "irq $n $(cat $n/smp_affinity_list) $(stat -c %a $n/smp_affinity_list) $(cat $n/effective_affinity_list 2>/dev/null)"
done
awk 'NR == 1 { ncpu = NF; next } $1 ~ /^[0-9]+:$/ { s = 0; for (i = 2; i <= ncpu + 1; i++) s += $i; print "count", substr($1, 1, length($1) - 1), s }' /proc/interrupts`)
	irqs := map[int]irqState{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("reading /proc/irq: unexpected line %q", line)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("reading /proc/irq: %q: %v", line, err)
		}
		st := irqs[n]
		switch {
		case f[0] == "irq" && len(f) >= 4:
			st.affinity = mustCPUs(t, f[2], line)
			mode, err := strconv.ParseUint(f[3], 8, 32)
			if err != nil {
				t.Fatalf("reading /proc/irq: %q: %v", line, err)
			}
			st.writable = mode&0o200 != 0
			if len(f) > 4 {
				st.effective = mustCPUs(t, f[4], line)
			}
		case f[0] == "count":
			st.active = true
			if st.count, err = strconv.ParseUint(f[2], 10, 64); err != nil {
				t.Fatalf("reading /proc/interrupts: %q: %v", line, err)
			}
		default:
			t.Fatalf("reading /proc/irq: unexpected line %q", line)
		}
		irqs[n] = st
	}
	return irqs
}

func mustCPUs(t *testing.T, s, line string) cpuset.Set {
	t.Helper()
	c, err := cpuset.Parse(s)
	if err != nil {
		t.Fatalf("reading /proc/irq: %q: %v", line, err)
	}
	return c
}

// readPlaced reads /run/gpuprep/irq-placed; nil when it is absent.
func readPlaced(t *testing.T, ctx context.Context) []irq.Placed {
	t.Helper()
	if !Exists(t, ctx, irq.PlacedPath) {
		return nil
	}
	text := MustRun(t, ctx, "cat "+irq.PlacedPath+" && stat -c 'mode %a' "+irq.PlacedPath)
	body, mode, _ := strings.Cut(text, "mode ")
	if strings.TrimSpace(mode) != "644" {
		t.Errorf("%s has mode %s, want 644 (irqbalance's policy script reads it)", irq.PlacedPath, strings.TrimSpace(mode))
	}
	ps, err := irq.ParsePlaced(irq.PlacedPath, []byte(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return ps
}

// mustPlace checks what the prolog wrote while the job runs (mustList),
// each placed IRQ's smp_affinity_list its "to", and no IRQ the kernel lets
// move left on a job CPU (checkPlacement). It returns the list.
func mustPlace(t *testing.T, ctx context.Context, when string, irqbalance bool) []irq.Placed {
	t.Helper()
	placed := mustList(t, ctx, when)
	checkPlacement(t, ctx, placed, when, irqbalance)
	return placed
}

// mustList checks the list the prolog wrote: it moves at least one IRQ
// (the VM's legacy IRQs may run on every CPU at boot), every IRQ to the
// housekeeping CPUs (no GPU, no HCA here), or, one already within them,
// kept where it was (listed, so that irqbalance bans it). It returns it.
func mustList(t *testing.T, ctx context.Context, when string) []irq.Placed {
	t.Helper()
	placed := readPlaced(t, ctx)
	var moved, refused []int
	for _, p := range placed {
		if p.Refused {
			refused = append(refused, p.IRQ)
		} else {
			moved = append(moved, p.IRQ)
		}
		kept := p.From.Equal(p.To) && p.To.IsSubsetOf(irqHousekeeping)
		if !p.To.Equal(irqHousekeeping) && !kept {
			t.Errorf("%s: IRQ %d placed on %s from %s, want the housekeeping CPUs %s (or kept within them)", when, p.IRQ, p.To, p.From, irqHousekeeping)
		}
	}
	t.Logf("%s: %s lists %d IRQs moved %v and %d the kernel refused %v", when, irq.PlacedPath, len(moved), moved, len(refused), refused)
	if len(moved) == 0 {
		t.Fatalf("%s: %s lists no IRQ moved: the scenario did not happen", when, irq.PlacedPath)
	}
	return placed
}

// checkPlacement checks that each IRQ placed holds its "to" and that no
// other IRQ the kernel lets move may run on a job CPU. An IRQ's effective
// CPU follows at its next interrupt on some chips (x86's IO-APIC without
// interrupt remapping: seen here on IRQs 1, 4 and 9), so one outside its
// "to" is accepted if it raised no interrupt since the first look, and
// one that did is waited for up to a minute.
func checkPlacement(t *testing.T, ctx context.Context, placed []irq.Placed, when string, irqbalance bool) {
	t.Helper()
	first := readIRQs(t, ctx)
	listed := map[int]irq.Placed{}
	for _, p := range placed {
		listed[p.IRQ] = p
	}
	for n, st := range first {
		p, ok := listed[n]
		switch {
		case ok && !p.Refused && !st.affinity.Equal(p.To):
			t.Errorf("%s: IRQ %d has smp_affinity_list %s, %s says %s", when, n, st.affinity, irq.PlacedPath, p.To)
		case ok && p.Refused && st.writable && st.affinity.Equal(p.To) && !p.From.Equal(p.To):
			t.Errorf("%s: IRQ %d is listed as refused by the kernel but holds %s", when, n, p.To)
		case !ok && st.active && st.writable && st.affinity.Intersection(irqJobCPUs).Size() > 0:
			// With irqbalance, an IRQ gpuprep did not place would be
			// moved at the rescan the prolog asks for: gpuprep places
			// every movable IRQ, those already off the job's CPUs too.
			t.Errorf("%s: IRQ %d (smp_affinity_list %s, writable, not in %s) may run on the job CPUs %s", when, n, st.affinity, irq.PlacedPath, irqJobCPUs)
		}
	}
	pending := func(irqs map[int]irqState) []int {
		var out []int
		for _, p := range placed {
			if st, ok := irqs[p.IRQ]; ok && !p.Refused && !st.effective.IsSubsetOf(p.To) {
				out = append(out, p.IRQ)
			}
		}
		return out
	}
	// Waited for: those that raised an interrupt since first (an idle
	// one's move waits for its next interrupt, however long).
	fired := func(irqs map[int]irqState) bool {
		for _, n := range pending(irqs) {
			if irqs[n].count != first[n].count {
				return true
			}
		}
		return false
	}
	now := first
	deadline := time.Now().Add(time.Minute)
	for fired(now) && time.Now().Before(deadline) {
		sleepCtx(t, ctx, 2*time.Second)
		now = readIRQs(t, ctx)
	}
	for _, n := range pending(now) {
		if now[n].count != first[n].count {
			t.Errorf("%s: IRQ %d raised %d interrupts but is still delivered to CPUs %s, outside %s", when, n, now[n].count-first[n].count, now[n].effective, listed[n].To)
		} else {
			t.Logf("%s: IRQ %d raised no interrupt yet: still delivered to CPU %s until its next one (smp_affinity_list %s)", when, n, now[n].effective, now[n].affinity)
		}
	}
}

// sleepCtx sleeps d, or fails the test when ctx ends first.
func sleepCtx(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("waiting: %v", ctx.Err())
	case <-time.After(d):
	}
}

// sameAffinities compares every IRQ's smp_affinity_list with before.
func sameAffinities(t *testing.T, before, now map[int]irqState, when string) {
	t.Helper()
	for n, b := range before {
		st, ok := now[n]
		switch {
		case !ok:
			t.Logf("%s: IRQ %d is gone", when, n)
		case !st.affinity.Equal(b.affinity):
			t.Errorf("%s: IRQ %d has smp_affinity_list %s, was %s before the job", when, n, st.affinity, b.affinity)
		}
	}
}

// journalCursor is the journal's position now: what a later journalSince
// reads from.
func journalCursor(t *testing.T, ctx context.Context) string {
	t.Helper()
	out := MustRun(t, ctx, "journalctl -q -n 1 --show-cursor -o cat --no-pager | sed -n 's/^-- cursor: //p'")
	c := strings.TrimSpace(out)
	if c == "" {
		t.Fatal("journalctl printed no cursor")
	}
	return c
}

// journalSince is what the journal holds after cursor; args pick the
// entries (-u UNIT, -t IDENTIFIER).
func journalSince(t *testing.T, ctx context.Context, cursor, args string) string {
	t.Helper()
	return MustRun(t, ctx, fmt.Sprintf("journalctl -q --no-pager -o cat --after-cursor=%s %s", vmnode.Quote(cursor), args))
}

// jobLog is what the prolog or epilog (ident gpuprep-prolog or
// gpuprep-epilog) logged to syslog for job id in this boot.
func jobLog(t *testing.T, ctx context.Context, ident string, id int) string {
	t.Helper()
	return MustRun(t, ctx, fmt.Sprintf("journalctl -b -q --no-pager -o cat -t %s | grep -F -w 'job=%d' || true", ident, id))
}

// startIrqbalance runs irqbalance in a transient unit sandboxed as Debian's
// irqbalance.service is (ReadOnlyPaths=/, ReadWritePaths=/proc/irq,
// RuntimeDirectory=irqbalance), with args, and stops it at the end of the
// test. debug sets IRQBALANCE_DEBUG (each balancing pass and its placement
// on stdout, which stdbuf makes line-buffered: irqbalance's stdout is
// the journal) without changing the arguments gpuprep reads.
func startIrqbalance(t *testing.T, ctx context.Context, debug bool, args ...string) {
	t.Helper()
	env := ""
	if debug {
		env = "--setenv=IRQBALANCE_DEBUG=1 "
	}
	MustRun(t, ctx, fmt.Sprintf("systemd-run -q --unit=%s --collect -p ReadOnlyPaths=/ -p ReadWritePaths=/proc/irq -p RuntimeDirectory=irqbalance %s/usr/bin/stdbuf -oL /usr/sbin/irqbalance --foreground %s",
		irqbalanceUnit, env, strings.Join(args, " ")))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		node.Run(ctx, "systemctl stop "+irqbalanceUnit+"; systemctl reset-failed "+irqbalanceUnit+" 2>/dev/null; true")
	})
	if _, err := node.WaitUntil(ctx, time.Second, "pgrep -x irqbalance >/dev/null"); err != nil {
		t.Fatalf("irqbalance did not start: %v\n%s", err, MustRun(t, ctx, "systemctl status --no-pager -n 20 "+irqbalanceUnit+" || true"))
	}
}

// irqbalanceActive fails the test unless the unit still runs.
func irqbalanceActive(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	if out, _, err := node.Run(ctx, "systemctl is-active "+irqbalanceUnit); err != nil {
		t.Fatalf("%s: irqbalance is %s:\n%s", when, strings.TrimSpace(out), MustRun(t, ctx, "journalctl -q --no-pager -n 30 -u "+irqbalanceUnit))
	}
}

// irqbalance's debug output (1.9: irqbalance.c scan, cputree.c dump_irq):
// a line of dashes opens each balancing pass; "Interrupt <n> node_num is"
// lists each IRQ it balances under the CPU, cache or package it put it
// on; "Rescanning cpu topology" is a rescan (SIGHUP), which asks the
// policy script again. Its syslog line "IRQ <n>: Override ban to true" is
// the policy script banning an IRQ.
var (
	passLine     = regexp.MustCompile(`(?m)^-{20,}$`)
	balancedLine = regexp.MustCompile(`(?m)Interrupt (\d+) node_num is`)
	bannedLine   = regexp.MustCompile(`(?m)IRQ (\d+): Override ban to true`)
)

// irqsIn lists the IRQ numbers re's first group matches in text.
func irqsIn(re *regexp.Regexp, text string) map[int]bool {
	out := map[int]bool{}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		out[n] = true
	}
	return out
}

// waitBans waits, up to 90 s, for irqbalance's journal after cursor to
// show the policy script banning every IRQ in want.
func waitBans(t *testing.T, ctx context.Context, cursor string, want map[int]bool, when string) {
	t.Helper()
	waitJournal(t, ctx, cursor, irqbalanceUnit, 90*time.Second, fmt.Sprintf("%s banning IRQs %v", when, irqList(want)), func(j string) bool {
		got := irqsIn(bannedLine, j)
		for n := range want {
			if !got[n] {
				return false
			}
		}
		return true
	})
}

// placedBalanced is the lowest placed IRQ in want the kernel let move.
func placedBalanced(t *testing.T, placed []irq.Placed, want map[int]bool) irq.Placed {
	t.Helper()
	for _, p := range placed {
		if want[p.IRQ] && !p.Refused {
			return p
		}
	}
	t.Fatalf("no IRQ in %v was moved by gpuprep: the scenario did not happen", irqList(want))
	return irq.Placed{}
}

// afterLast is text after the last match of re ("" when none).
func afterLast(re *regexp.Regexp, text string) (string, bool) {
	locs := re.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return "", false
	}
	return text[locs[len(locs)-1][1]:], true
}

// waitJournal polls the unit's journal after cursor until ok says it holds
// what is waited for, up to limit; it returns the journal read last.
func waitJournal(t *testing.T, ctx context.Context, cursor, unit string, limit time.Duration, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := journalSince(t, ctx, cursor, "-u "+unit)
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, irqbalance's journal does not show %s; it holds:\n%s", limit, what, lastLines(j, 60))
		}
		sleepCtx(t, ctx, 2*time.Second)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func irqList(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// irq_affinity on the VM's real kernel: without irqbalance the IRQs move
// to the housekeeping CPUs for the job and back exactly after it; with
// irqbalance and gpuprep's policy script, irqbalance leaves the placed
// IRQs alone through its passes and balances them again after the job;
// with irqbalance without the script, nothing moves and the prolog says
// how to run irqbalance.
func TestIRQAffinity(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 25*time.Minute)
	if !Exists(t, ctx, irqPolicyScript) {
		t.Fatalf("%s is not installed (make install)", irqPolicyScript)
	}
	if out, _, err := node.Run(ctx, "pgrep -a -x irqbalance"); err == nil {
		t.Fatalf("irqbalance runs before the scenario starts it (the image masks it):\n%s", out)
	}
	SetConfig(t, irqConfig)
	initial := readIRQs(t, ctx)
	// irqbalance moves IRQs for good: put back what the VM had, for the
	// scenarios after this one (the kernel refuses some: ignored).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var cmd strings.Builder
		for n, st := range initial {
			if st.writable {
				fmt.Fprintf(&cmd, "echo %s >/proc/irq/%d/smp_affinity_list 2>/dev/null; ", st.affinity, n)
			}
		}
		node.Run(ctx, cmd.String()+"true")
	})

	t.Run("without irqbalance", func(t *testing.T) {
		before := readIRQs(t, ctx)
		id := StartSleepJob(t, ctx, "alice", 600, "-c1")
		placed := mustPlace(t, ctx, "job running", false)
		for _, p := range placed {
			if b, ok := before[p.IRQ]; ok && !b.affinity.Equal(p.From) {
				t.Errorf("IRQ %d: %s says it was on %s, it was on %s", p.IRQ, irq.PlacedPath, p.From, b.affinity)
			}
		}
		if err := node.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := node.WaitJobEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
		if Exists(t, ctx, irq.PlacedPath) {
			t.Errorf("%s is left after the epilog:\n%s", irq.PlacedPath, MustRead(t, ctx, irq.PlacedPath))
		}
		sameAffinities(t, before, readIRQs(t, ctx), "after the epilog")
	})

	t.Run("irqbalance with the policy script", func(t *testing.T) {
		start := journalCursor(t, ctx)
		startIrqbalance(t, ctx, true, "--policyscript="+irqPolicyScript)
		// SIGHUP is ignored until irqbalance finished a pass: wait for
		// one (a pass every 10 s; the first 10 s after the start).
		j := waitJournal(t, ctx, start, irqbalanceUnit, 90*time.Second, "a balancing pass", func(j string) bool {
			rest, ok := afterLast(passLine, j)
			return ok && strings.Contains(rest, "CPU number")
		})
		balanced := irqsIn(balancedLine, j)
		t.Logf("irqbalance balances IRQs %v", irqList(balanced))

		beforeJob := journalCursor(t, ctx)
		id := StartSleepJob(t, ctx, "alice", 600, "-c1")
		placed := mustList(t, ctx, "job running, irqbalance with the policy script")
		// irqbalance rescans at its next pass after the prolog's SIGHUP
		// and asks the policy script about every IRQ: it bans those
		// listed that it balanced. Until then a pass of irqbalance's may
		// still move them (one under way as the prolog wrote, CI saw it);
		// the script puts each back as it bans it.
		want := map[int]bool{}
		for _, p := range placed {
			if balanced[p.IRQ] {
				want[p.IRQ] = true
			}
		}
		if len(want) == 0 {
			t.Fatalf("no IRQ gpuprep placed is one irqbalance balanced (%v): the scenario did not happen", irqList(balanced))
		}
		waitBans(t, ctx, beforeJob, want, "a rescan after the prolog")
		checkPlacement(t, ctx, placed, "job running, after irqbalance's rescan", true)

		// What irqbalance does in a pass before its rescan, done here:
		// a placed IRQ moved onto the job's CPUs. The next rescan
		// (SIGHUP) bans it again and the script puts it back on
		// gpuprep's CPUs.
		moved := placedBalanced(t, placed, want)
		MustRun(t, ctx, fmt.Sprintf("echo %s >/proc/irq/%d/smp_affinity_list", irqJobCPUs, moved.IRQ))
		beforeHUP := journalCursor(t, ctx)
		MustRun(t, ctx, "systemctl kill -s HUP "+irqbalanceUnit)
		waitBans(t, ctx, beforeHUP, map[int]bool{moved.IRQ: true}, "a rescan after irqbalance moved IRQ "+strconv.Itoa(moved.IRQ))
		if got := readIRQs(t, ctx)[moved.IRQ].affinity; !got.Equal(moved.To) {
			t.Errorf("IRQ %d moved to %s before irqbalance's rescan: holds %s after it, want gpuprep's %s", moved.IRQ, irqJobCPUs, got, moved.To)
		}

		// 30 s: three of irqbalance's passes.
		window := journalCursor(t, ctx)
		sleepCtx(t, ctx, 30*time.Second)
		irqbalanceActive(t, ctx, "after 30 s of the job")
		j = journalSince(t, ctx, window, "-u "+irqbalanceUnit)
		if n := len(passLine.FindAllString(j, -1)); n < 2 {
			t.Errorf("irqbalance ran %d balancing passes in 30 s, want 2 or more:\n%s", n, lastLines(j, 40))
		}
		for n := range irqsIn(balancedLine, j) {
			if want[n] {
				t.Errorf("irqbalance balanced IRQ %d, which gpuprep placed and its policy script bans", n)
			}
		}
		checkPlacement(t, ctx, placed, "after 30 s of irqbalance", true)

		afterJob := journalCursor(t, ctx)
		if err := node.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := node.WaitJobEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
		if Exists(t, ctx, irq.PlacedPath) {
			t.Errorf("%s is left after the epilog:\n%s", irq.PlacedPath, MustRead(t, ctx, irq.PlacedPath))
		}
		// The epilog's SIGHUP: at its next pass irqbalance rescans, the
		// script bans nothing, and it balances those IRQs again.
		waitJournal(t, ctx, afterJob, irqbalanceUnit, 90*time.Second, fmt.Sprintf("a rescan after the epilog that balances IRQs %v again", irqList(want)), func(j string) bool {
			_, rest, ok := strings.Cut(j, "Rescanning cpu topology")
			if !ok {
				return false
			}
			got := irqsIn(balancedLine, rest)
			for n := range want {
				if !got[n] {
					return false
				}
			}
			return true
		})
		if e := jobLog(t, ctx, "gpuprep-epilog", id); !strings.Contains(e, "handed back to irqbalance") {
			t.Errorf("the epilog's log does not say the IRQs were handed back to irqbalance:\n%s", lastLines(e, 20))
		}
	})

	t.Run("irqbalance without the policy script", func(t *testing.T) {
		// --interval=3600: irqbalance runs (gpuprep must see it) but
		// makes no pass during the scenario, so any IRQ moved would be
		// gpuprep's doing.
		startIrqbalance(t, ctx, false, "--interval=3600")
		before := readIRQs(t, ctx)
		id := StartSleepJob(t, ctx, "alice", 600, "-c1")
		if Exists(t, ctx, irq.PlacedPath) {
			t.Errorf("%s written although irqbalance runs without the policy script:\n%s", irq.PlacedPath, MustRead(t, ctx, irq.PlacedPath))
		}
		sameAffinities(t, before, readIRQs(t, ctx), "job running, irqbalance without the policy script")
		prolog := jobLog(t, ctx, "gpuprep-prolog", id)
		var warning string
		for _, line := range strings.Split(prolog, "\n") {
			if strings.Contains(line, "irq_affinity") && strings.Contains(line, "--policyscript") {
				warning = line
			}
		}
		if warning == "" {
			t.Errorf("the prolog's log does not name irq_affinity and --policyscript:\n%s", lastLines(prolog, 20))
		} else {
			t.Logf("the prolog says: %s", warning)
		}
		if err := node.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := node.WaitJobEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
		sameAffinities(t, before, readIRQs(t, ctx), "after the epilog, irqbalance without the policy script")
		NodeLeftIdle(t, ctx, "after the job")
	})
}
