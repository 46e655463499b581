package vmtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// bench-noise's feeder on the systemd node: a feeder loop (test/cpufeeder.py,
// the host-side step of test/feeder.py: the VM has no GPU) pinned to CPU 3
// of a job, with hog.service spinning on every CPU. Without housekeeping the
// hog shares the feeder's CPU; with housekeeping_cpus = "0" gpuprep's prolog
// confines it to CPU 0 and the feeder's step time comes back.
func TestNoisyNeighbourConfined(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 10*time.Minute)
	feeder, err := os.ReadFile(filepath.Join(repoDir, "test", "cpufeeder.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := node.WriteFile(ctx, "/tmp/cpufeeder.py", feeder, 0o644); err != nil {
		t.Fatal(err)
	}
	addUnit(t, ctx, "hog.service", hogUnit, true)
	feed := func(tag string) float64 {
		t.Helper()
		out, stderr, err := node.Srun(ctx, "alice", "-c4", "--exclusive", "sh", "-c",
			"TAG="+tag+" taskset -c 3 python3 /tmp/cpufeeder.py 150 20000; grep Cpus_allowed_list /proc/$(systemctl show -p MainPID --value hog.service)/status")
		if err != nil {
			t.Fatalf("feeder (%s): %v\n%s", tag, err, stderr)
		}
		t.Logf("%s", out)
		m := regexp.MustCompile(`p50=([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("feeder (%s) printed no p50:\n%s", tag, out)
		}
		p50, _ := strconv.ParseFloat(m[1], 64)
		want := "0-3"
		if tag == "isolated" {
			want = "0"
		}
		if !regexp.MustCompile(`Cpus_allowed_list:\s+` + regexp.QuoteMeta(want) + `\n`).MatchString(out) {
			t.Errorf("%s: the hog's Cpus_allowed_list while the feeder ran is not %s:\n%s", tag, want, out)
		}
		return p50
	}
	noisy := feed("noisy")
	SetConfig(t, BaseConfig+slowNode+"\n[profiles.default]\nhousekeeping_cpus = \"0\"\n")
	isolated := feed("isolated")
	t.Logf("feeder p50: noisy %.2f ms, isolated %.2f ms (%.2fx)", noisy, isolated, isolated/noisy)
	// The step times are logged, not judged: under TCG the vCPUs are host
	// threads the host schedules as it likes, and the ratio came out
	// 0.74-0.87x in two runs, too close to noise for a pass/fail line.
	// What the test asserts is where the hog may run, exactly, above and
	// below. bench-noise on a real node judges the times.
	if _, _, err := node.WaitNodeState(ctx, "idle"); err != nil { // the srun job's epilog ran
		t.Fatal(err)
	}
	free(t, ctx, "hog.service", "after the isolated feeder's epilog")
}
