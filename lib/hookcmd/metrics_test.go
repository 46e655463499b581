package hookcmd

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
	"gpuprep/lib/metrics"
	"gpuprep/lib/state"
	"gpuprep/lib/textfiledir"
)

// metricsNode is a fixture node root (a /proc with a boot id) and a spool.
type metricsNode struct {
	t    *testing.T
	root string
	sp   *state.Spool
	logs bytes.Buffer
}

func newMetricsNode(t *testing.T) *metricsNode {
	n := &metricsNode{t: t, root: t.TempDir()}
	n.boot("5fdd1806-8066-4c6e-9d59-0a5c1b1c0001")
	sp, err := state.Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	n.sp = sp
	return n
}

func (n *metricsNode) boot(id string) {
	p := filepath.Join(n.root, "proc/sys/kernel/random/boot_id")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *metricsNode) mkdir(p string) string {
	full := filepath.Join(n.root, p)
	if err := os.MkdirAll(full, 0o755); err != nil {
		n.t.Fatal(err)
	}
	return full
}

// run records one epilog run with metrics_dir set to setting and returns
// the log lines it wrote.
func (n *metricsNode) run(setting string) string {
	n.logs.Reset()
	cfg := config.Default()
	cfg.General.MetricsDir = setting
	log := slog.New(slog.NewTextHandler(&n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	recordMetrics(host.NewRoot(n.root), cfg, n.sp, metrics.HookEpilog, "gpu01", 20*time.Millisecond, nil, &hook.Outcome{}, log)
	return n.logs.String()
}

func warnings(logs string) int { return strings.Count(logs, "level=WARN") }

// TestMetricsAutoWritesWhereNodeExporterReads: "auto" writes gpuprep-<hook>.prom,
// with the build info, into the directory a running node_exporter names,
// and the debug log says where that came from.
func TestMetricsAutoWritesWhereNodeExporterReads(t *testing.T) {
	n := newMetricsNode(t)
	tf := n.mkdir("/srv/node-exporter/textfile")
	n.mkdir(textfiledir.DebianDir)
	fakeproc.Add(t, n.root, 4242, 113, "/usr/bin/prometheus-node-exporter",
		"/usr/bin/prometheus-node-exporter --collector.textfile.directory /srv/node-exporter/textfile", "0::/\n")
	defer func(v, c string) { cmdenv.Version, cmdenv.Commit = v, c }(cmdenv.Version, cmdenv.Commit)
	cmdenv.Version, cmdenv.Commit = "1.4.0", "abc1234"

	logs := n.run(config.MetricsDirAuto)
	prom, err := os.ReadFile(filepath.Join(tf, metrics.PromFile(metrics.HookEpilog)))
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	host, _ := os.Hostname()
	node := `Hostname="` + host + `",slurm_node="gpu01"`
	for _, want := range []string{
		"# TYPE gpuprep_build_info gauge\n",
		`gpuprep_build_info{hook="epilog",version="1.4.0",commit="abc1234",` + node + `} 1` + "\n",
		`gpuprep_last_run_success{hook="epilog",` + node + `} 1` + "\n",
	} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("gpuprep-epilog.prom lacks %q:\n%s", want, prom)
		}
	}
	if _, err := os.Stat(filepath.Join(n.root, textfiledir.DebianDir, metrics.PromFile(metrics.HookEpilog))); err == nil {
		t.Error("also written to Debian's default directory")
	}
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "prometheus-node-exporter process 4242") || warnings(logs) != 0 {
		t.Errorf("log does not name the source at debug level:\n%s", logs)
	}
}

// TestMetricsAutoDebianDefault: no node_exporter running (yet), Debian's
// directory there: that one.
func TestMetricsAutoDebianDefault(t *testing.T) {
	n := newMetricsNode(t)
	deb := n.mkdir(textfiledir.DebianDir)
	n.mkdir(textfiledir.LegacyDir)
	n.run(config.MetricsDirAuto)
	if _, err := os.Stat(filepath.Join(deb, metrics.PromFile(metrics.HookEpilog))); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsMissingDirWarnsOncePerBoot: no directory is one warning line
// naming what was tried and the key to set, then silence (debug) for the
// rest of the boot; a new boot, a new setting, or the directory coming
// and going again warn again. Nothing is created.
func TestMetricsMissingDirWarnsOncePerBoot(t *testing.T) {
	n := newMetricsNode(t)
	n.mkdir("/proc")
	logs := n.run(config.MetricsDirAuto)
	if warnings(logs) != 1 {
		t.Fatalf("first run: %d warnings:\n%s", warnings(logs), logs)
	}
	for _, want := range []string{"metrics not written", "running node_exporter: none found", textfiledir.DebianDir + ": absent",
		textfiledir.LegacyDir + ": absent", "set general.metrics_dir in " + config.DefaultPath, `or to \"\" for no metrics`} {
		if !strings.Contains(logs, want) {
			t.Errorf("warning lacks %q:\n%s", want, logs)
		}
	}
	for i := range 3 {
		if logs := n.run(config.MetricsDirAuto); warnings(logs) != 0 || !strings.Contains(logs, "metrics not written") {
			t.Fatalf("run %d of the same boot: %d warnings (want the line at debug only):\n%s", i+2, warnings(logs), logs)
		}
	}
	missing := filepath.Join(t.TempDir(), "textfile")
	if logs := n.run(missing); warnings(logs) != 1 || !strings.Contains(logs, missing+": absent") {
		t.Fatalf("another setting: %d warnings:\n%s", warnings(logs), logs)
	}
	if warnings(n.run(missing)) != 0 {
		t.Fatal("explicit directory warned twice in a boot")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the textfile directory was created")
	}
	n.boot("5fdd1806-8066-4c6e-9d59-0a5c1b1c0002")
	if warnings(n.run(missing)) != 1 {
		t.Fatal("no warning after a reboot")
	}
	os.Mkdir(missing, 0o755)
	if logs := n.run(missing); warnings(logs) != 0 {
		t.Fatalf("directory there: %s", logs)
	}
	if _, err := os.Stat(filepath.Join(missing, metrics.PromFile(metrics.HookEpilog))); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(missing)
	if warnings(n.run(missing)) != 1 {
		t.Fatal("no warning when the directory went away again in the same boot")
	}
}

// TestMetricsOff: metrics_dir = "" writes nothing and says nothing.
func TestMetricsOff(t *testing.T) {
	n := newMetricsNode(t)
	deb := n.mkdir(textfiledir.DebianDir)
	if logs := n.run(""); logs != "" {
		t.Errorf("logged %q", logs)
	}
	if ents, _ := os.ReadDir(deb); len(ents) != 0 {
		t.Errorf("wrote %v", ents)
	}
}
