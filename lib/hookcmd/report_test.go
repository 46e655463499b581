package hookcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/drift"
	"gpuprep/lib/fleet"
)

// exampleFleet is examples/fleet-drift: gpu01, gpu02 and gpu07's drift
// files, as an admin's copy of them would be laid out.
var exampleFleet = filepath.Join("..", "..", "examples", "fleet-drift")

// exampleFleetText is --report --from examples/fleet-drift.
const exampleFleetText = `FLEET: 6 records, 3 knobs, 3 nodes, 3 files
KNOB             SCOPE  KIND       RECORDS  NODES  HOSTLIST    LAST SEEN
cpu_governor     node   drift      4        2      gpu[01-02]  2026-03-04 09:40:12Z
gpu_persistence  gpu    invariant  1        1      gpu07       2026-03-04 16:20:09Z
thp_enabled      node   drift      1        1      gpu07       2026-03-02 11:05:44Z

TOP NODES
NODE   RECORDS  KNOBS  MOST FREQUENT KNOB
gpu01  3        1      cpu_governor (3)
gpu07  2        2      gpu_persistence (1)
gpu02  1        1      cpu_governor (1)
`

// fleetConfig is a configuration whose state dir does not exist: --from
// must not open it (nor need it).
func fleetConfig(t *testing.T) (cfg, spool string) {
	dir := t.TempDir()
	cfg = filepath.Join(dir, "g.toml")
	spool = filepath.Join(dir, "spool")
	if err := os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\nstate_dir = \""+spool+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, spool
}

// The example fleet, and the same three nodes copied in the other layouts
// (a node's directory, <node>.drift.jsonl), give the same summary, as text
// and JSON; no spool is opened or created.
func TestFleetReportExample(t *testing.T) {
	cfg, spool := fleetConfig(t)
	code, out, stderr := mainRun("epilog", nil, "--config", cfg, "--report", "--from", exampleFleet)
	if code != 0 || out != exampleFleetText || stderr != "" {
		t.Fatalf("--report --from %s: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", exampleFleet, code, stderr, out, exampleFleetText)
	}

	// Copied by hand, one node each way, and one torn write on gpu02.
	dir := filepath.Join(t.TempDir(), "fleet")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(exampleFleet, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	os.MkdirAll(filepath.Join(dir, "gpu01"), 0o755)
	os.WriteFile(filepath.Join(dir, "gpu01", "drift.jsonl"), []byte(read("gpu01.jsonl")), 0o644)
	os.WriteFile(filepath.Join(dir, "gpu02.drift.jsonl"), []byte(read("gpu02.jsonl")+`{"time":"2026-03-05T01:00:00Z","kn`), 0o644)
	other := filepath.Join(t.TempDir(), "gpu07.jsonl")
	os.WriteFile(other, []byte(read("gpu07.jsonl")), 0o644)
	code, out, stderr = mainRun("epilog", nil, "--config", cfg, "--report", "--from", dir, "--from", other)
	wantText := strings.Replace(exampleFleetText, "3 files\n", "3 files (1 unreadable line skipped)\n", 1)
	wantErr := "gpuprep-epilog: warning: skipped a torn last line in " + filepath.Join(dir, "gpu02.drift.jsonl") + " (line 2)\n"
	if code != 0 || out != wantText || stderr != wantErr {
		t.Errorf("three layouts: exit %d, stderr %q (want %q), stdout:\n%s", code, stderr, wantErr, out)
	}

	code, out, stderr = mainRun("epilog", nil, "--config", cfg, "--report", "--from", exampleFleet, "--json", "--top", "2")
	var rep fleet.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || stderr != "" || err != nil {
		t.Fatalf("--json: exit %d, stderr %q, %v:\n%s", code, stderr, err, out)
	}
	if len(rep.Files) != 3 || rep.Files[0].Node != "gpu01" || rep.Files[0].Records != 3 || rep.Files[2].Path != filepath.Join(exampleFleet, "gpu07.jsonl") {
		t.Errorf("files %+v", rep.Files)
	}
	if k := rep.Knobs[0]; len(rep.Knobs) != 3 || k.Knob != "cpu_governor" || k.Hostlist != "gpu[01-02]" || k.Records != 4 || k.Nodes != 2 ||
		!k.LastSeen.Equal(time.Date(2026, 3, 4, 9, 40, 12, 0, time.UTC)) {
		t.Errorf("knobs %+v", rep.Knobs)
	}
	if len(rep.TopNodes) != 2 || rep.TopNodes[1].Node != "gpu07" || rep.TopNodes[1].TopKnob != "gpu_persistence" || rep.Totals.Nodes != 3 {
		t.Errorf("--top 2: %+v, totals %+v", rep.TopNodes, rep.Totals)
	}

	code, out, _ = mainRun("epilog", nil, "--config", cfg, "--report", "--from", exampleFleet, "--top", "1")
	if code != 0 || !strings.Contains(out, "\nTOP NODES (1 of 3; --top 0 lists all)\n") || strings.Contains(out, "gpu02  1") {
		t.Errorf("--top 1: exit %d:\n%s", code, out)
	}
	if _, err := os.Lstat(spool); !os.IsNotExist(err) {
		t.Errorf("--from created the config's state dir %s (%v)", spool, err)
	}
}

// --since keeps the newer records of every file.
func TestFleetReportSince(t *testing.T) {
	cfg, _ := fleetConfig(t)
	fleet := t.TempDir()
	rec := func(age time.Duration, node string) string {
		b, _ := json.Marshal(drift.Record{Time: time.Now().Add(-age).UTC(), Node: node, Job: "9", Knob: "cpu_governor", Scope: "node", Expected: "performance", Found: "powersave", Kind: drift.KindDrift})
		return string(b) + "\n"
	}
	os.WriteFile(filepath.Join(fleet, "gpu11.jsonl"), []byte(rec(48*time.Hour, "gpu11")+rec(time.Hour, "gpu11")), 0o644)
	os.WriteFile(filepath.Join(fleet, "gpu12.jsonl"), []byte(rec(72*time.Hour, "gpu12")), 0o644)
	code, out, _ := mainRun("epilog", nil, "--config", cfg, "--report", "--from", fleet, "--since", "24h")
	if code != 0 || !strings.HasPrefix(out, "FLEET: 1 record, 1 knob, 1 node, 2 files\n") || !strings.Contains(out, "gpu11  1") {
		t.Errorf("--since 24h: exit %d:\n%s", code, out)
	}
	code, out, _ = mainRun("epilog", nil, "--config", cfg, "--report", "--from", fleet, "--since", "1m")
	if code != 0 || out != "FLEET: 0 records, 0 knobs, 0 nodes, 2 files\nno drift recorded\n" {
		t.Errorf("--since 1m: exit %d:\n%s", code, out)
	}
}

// Bad input is exit 2 and one stderr line naming what is wrong.
func TestFleetReportBadInput(t *testing.T) {
	cfg, spool := fleetConfig(t)
	empty := t.TempDir()
	missing := filepath.Join(empty, "gpu99.jsonl")
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"missing path", []string{"--report", "--from", exampleFleet, "--from", missing}, "gpuprep-epilog: --from " + missing + ": no such file or directory\n"},
		{"no drift file", []string{"--report", "--from", empty}, "gpuprep-epilog: --from " + empty + ": no drift file in it (want <node>.jsonl, <node>.drift.jsonl, <node>/drift.jsonl or drift.jsonl)\n"},
		{"without --report", []string{"--from", exampleFleet}, "gpuprep-epilog: --from and --top go with --report\n"},
		{"--top without --from", []string{"--report", "--top", "3"}, "gpuprep-epilog: --top goes with --from\n"},
		{"negative --top", []string{"--report", "--from", exampleFleet, "--top", "-1"}, "gpuprep-epilog: --top -1: want 0 (every node) or more\n"},
		{"a glob after --from", []string{"--report", "--from", exampleFleet, filepath.Join(exampleFleet, "gpu02.jsonl")}, `gpuprep-epilog: unexpected argument "` + filepath.Join(exampleFleet, "gpu02.jsonl") + `": give each path its own --from` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := mainRun("epilog", nil, append([]string{"--config", cfg}, c.args...)...)
			if code != 2 || out != "" || !strings.HasPrefix(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d (want 2), stdout %q, stderr %q (want %q)", code, out, stderr, c.stderr)
			}
		})
	}
	// Without --from, --report is today's: the config's state dir, which
	// does not exist.
	code, _, stderr := mainRun("epilog", nil, "--config", cfg, "--report")
	if want := "gpuprep-epilog: state dir " + spool + " (general.state_dir) does not exist"; code != 2 || !strings.HasPrefix(stderr, want) {
		t.Errorf("--report without --from: exit %d, stderr %q", code, stderr)
	}
}
