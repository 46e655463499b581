package metrics

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testMetrics() Metrics {
	var m Metrics
	recs := history()
	recs = append(recs, rec(50, "gpu01", "weird \"knob\"\\\nname", "0", "a", "b"))
	m.AddDrift(recs)
	m.SetRun(HookEpilog, t0.Add(time.Minute), 31*time.Millisecond, false)
	m.AddDeadJob("cgroup")
	m.AddDeadJob("cgroup")
	m.AddDeadJob("reboot")
	return m
}

func TestFormatMetrics(t *testing.T) {
	text := string(Format(HookEpilog, testNode, testMetrics(), Build{Version: "1.2.0", Commit: "3fd78c6"}))
	t.Log("\n" + text)
	got, err := parseProm(text)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, text)
	}
	want := map[string]float64{
		`gpuprep_drift_events_total{hook="epilog",kind="drift",knob="cpu.governor"}`:           3,
		`gpuprep_drift_events_total{hook="epilog",kind="drift",knob="thp.enabled"}`:            1,
		`gpuprep_drift_events_total{hook="epilog",kind="drift",knob="weird \"knob\"\\\nname"}`: 1,
		`gpuprep_drift_events_total{hook="epilog",kind="invariant",knob="gpu.persistence"}`:    1,
		`gpuprep_last_run_duration_seconds{hook="epilog"}`:                                     0.031,
		`gpuprep_last_run_success{hook="epilog"}`:                                              0,
		`gpuprep_last_run_timestamp_seconds{hook="epilog"}`:                                    float64(t0.Unix() + 60),
		`gpuprep_dead_jobs_released_total{hook="epilog",reason="cgroup"}`:                      2,
		`gpuprep_dead_jobs_released_total{hook="epilog",reason="reboot"}`:                      1,
		`gpuprep_build_info{commit="3fd78c6",hook="epilog",version="1.2.0"}`:                   1,
		`gpuprep_kmsg_lost_records_total{hook="epilog"}`:                                       0,
	}
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for _, name := range []string{MetricDriftEvents, MetricRunDuration, MetricRunSuccess, MetricRunTime, MetricDeadJobs, MetricBuildInfo} {
		if !strings.Contains(text, "# HELP "+name+" ") || !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("no HELP/TYPE for %s", name)
		}
	}
	if !strings.Contains(text, "# TYPE gpuprep_drift_events_total counter\n") {
		t.Error("drift events are not a counter")
	}
	if !strings.Contains(text, "# TYPE gpuprep_build_info gauge\n") {
		t.Error("build info is not a gauge")
	}
	// Empty metrics, from a build without a commit, are still a valid
	// file, with the build info (an empty commit label) and the lost
	// kernel log records at 0 (a counter an alert's increase() needs from
	// the start).
	got, err = parseProm(string(Format(HookProlog, testNode, Metrics{}, Build{Version: "dev"})))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[`gpuprep_build_info{commit="",hook="prolog",version="dev"}`] != 1 || got[`gpuprep_kmsg_lost_records_total{hook="prolog"}`] != 0 {
		t.Fatalf("empty metrics: %v", got)
	}
	// Odd characters in a version survive as escaped label values.
	got, err = parseProm(string(Format(HookProlog, testNode, Metrics{}, Build{Version: "1.0.0-rc\"1\"\\x"})))
	if err != nil || got[`gpuprep_build_info{commit="",hook="prolog",version="1.0.0-rc\"1\"\\x"}`] != 1 {
		t.Fatalf("escaped version: %v %v", got, err)
	}
}

// TestParserRejects: the validator itself catches what it is for.
func TestParserRejects(t *testing.T) {
	for _, bad := range []string{
		"m 1",                                   // no final newline
		"m{a=\"x\ny\"} 1\n",                     // raw newline in a label value
		"m{a=\"x\\q\"} 1\n",                     // bad escape
		"9m 1\n",                                // bad name
		"m one\n",                               // bad value
		"m 1\nm 2\n",                            // duplicate series
		"m 1\n# TYPE m gauge\n",                 // TYPE after samples
		"# TYPE m gauge\n# TYPE m gauge\nm 1\n", // second TYPE
		"# TYPE m thing\n",                      // bad type
		"m{a=\"1\",a=\"2\"} 1\n",                // repeated label
		"m{__a=\"1\"} 1\n",                      // reserved label name
		"m 1 1700000000000\n",                   // timestamp
	} {
		if _, err := parseProm(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestWriteMetrics(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Symlink(victim, filepath.Join(dir, PromFile(HookEpilog))) // planted: replaced, not followed
	// The one file of earlier releases goes, or its series would be
	// reported twice.
	os.WriteFile(filepath.Join(dir, LegacyPromFile), []byte("gpuprep_build_info 1\n"), 0o644)
	if err := Write(dir, HookEpilog, testNode, testMetrics(), Build{Version: "dev"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, PromFile(HookEpilog))
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%s: %v %v", path, fi.Mode(), err)
	}
	if readFile(t, victim) != "keep" {
		t.Fatal("symlink target written")
	}
	if _, err := parseProm(readFile(t, path)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}

	missing := filepath.Join(t.TempDir(), "textfile")
	if err := Write(missing, HookEpilog, testNode, Metrics{}, Build{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("Write created the textfile directory")
	}
}

// testNode is the node the tests' metrics are of: its Slurm name is not
// its host name.
var testNode = Node{Hostname: "gpu01", SlurmName: "node-a17"}
