package hookcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/evidence"
	"gpuprep/lib/evidence/evfile"
	"gpuprep/lib/gpu"
	"gpuprep/lib/state"
)

// finished is job id's finished record on node: one GPU for an hour at
// watts, held down by heat for share of it.
func finished(id, node string, watts, share float64) evidence.Record {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	snap := func(at time.Time, mj, ns uint64) evidence.Snapshot {
		c := gpu.Counters{Values: map[gpu.Counter]uint64{gpu.EnergyMJ: mj, gpu.HWThermalNs: ns}}
		return evidence.Snapshot{Time: at, GPUs: []evidence.GPUSnapshot{{UUID: "GPU-" + node, BusID: "0000:18:00.0", Counters: &c}}}
	}
	r := evidence.Record{Format: evidence.Format, Job: evidence.Job{ID: id, User: "alice", UID: 1000, Node: node, Start: t0},
		Start: snap(t0, 1e9, 0), Running: true}
	r.Finish(snap(t0.Add(time.Hour), 1e9+uint64(watts*3600*1000), uint64(share*3600e9)))
	return r
}

// saveRecords writes rs into the evidence directory of state dir.
func saveRecords(t *testing.T, stateDir string, rs ...evidence.Record) {
	t.Helper()
	sp, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	sp.Close()
	d, err := evfile.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, r := range rs {
		if _, err := d.Write(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReportJobUsage(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"), 0o644)
	spool := filepath.Join(dir, "spool")
	saveRecords(t, spool, finished("41", "gpu01", 700, 0.2))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--job", "41"}, "--job goes with --report"},
		{[]string{"--report", "--job", "../41"}, `job id "../41"`},
		{[]string{"--report", "--job", "42"}, "no evidence of job 42"},
	} {
		code, _, stderr := mainRun("epilog", nil, append([]string{"--config", cfg, "--state-dir", spool}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	code, out, stderr := mainRun("epilog", nil, "--config", cfg, "--state-dir", spool, "--report", "--job", "41")
	if code != 0 || !strings.Contains(out, "held down by heat 20%") || !strings.Contains(out, "700 W") {
		t.Errorf("--report --job 41: exit %d %s\n%s", code, stderr, out)
	}
}

// Collected from two nodes: a job's parts merge; the fleet report lists
// the GPU that throttles its jobs first.
func TestReportEvidenceFromManyNodes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"), 0o644)
	fleet := filepath.Join(dir, "fleet")
	saveRecords(t, filepath.Join(fleet, "gpu01"), finished("50", "gpu01", 600, 0), finished("51", "gpu01", 600, 0))
	saveRecords(t, filepath.Join(fleet, "gpu02"), finished("50", "gpu02", 400, 0.3))
	os.WriteFile(filepath.Join(fleet, "gpu01", "drift.jsonl"), nil, 0o600)
	code, out, stderr := mainRun("epilog", nil, "--config", cfg, "--report", "--job", "50", "--from", fleet, "--json")
	var v evidence.JobView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Parts) != 2 || v.Total == nil || v.Total.EnergyJ == nil ||
		*v.Total.EnergyJ != 3_600_000 {
		t.Fatalf("--report --job 50 --from: exit %d %s\n%s; want 2 parts, 3.6 MJ", code, stderr, out)
	}
	code, out, stderr = mainRun("epilog", nil, "--config", cfg, "--report", "--from", fleet)
	rows := strings.Split(out[strings.Index(out, "Fleet:"):], "\n")
	if code != 0 || len(rows) < 4 || !strings.HasPrefix(rows[2], "gpu02") || !strings.Contains(rows[2], "30%") {
		t.Fatalf("--report --from: exit %d %s\n%s; want gpu02 (30%% thermal) first", code, stderr, out)
	}
}
