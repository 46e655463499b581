package prometheus

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantData is a panel target that must return data from the demo's
// metrics: the target's result is not empty and, when label is set, has
// a sample with each of values.
type wantData struct {
	title, ref, label string
	values            []string
}

var demoData = []wantData{
	{"gpuprep versions", "A", "", nil},
	{"Prolog and epilog time", "A", "hook", []string{"prolog", "epilog"}},
	{"Metric freshness", "A", "hook", []string{"prolog", "epilog", "health"}},
	{"Metric freshness", "B", "hook", []string{"prolog", "epilog", "health"}},
	{"Drift by knob and node", "A", "", nil},
	{"Drift by knob and node", "B", "", nil},
	{"Health by check", "A", "hook", []string{"prolog", "health"}},
	{"Xids by GPU and code", "A", "code", []string{"79"}},
	{"Xids by GPU and code", "B", "code", []string{"79"}},
	{"Xid rate per node", "A", "severity", []string{"fatal"}},
	{"Dead jobs released and profile fallbacks", "A", "reason", []string{"cgroup"}},
}

// TestLive runs the demo (examples/demo.sh, bin/sim's programs) for the
// metric files gpuprep really writes, serves them with node_exporter's
// textfile collector to a Prometheus that scrapes it every second with
// gpuprep.rules.yml loaded, and runs every rule's and every dashboard
// panel's expression through the query API: none may fail, and the
// panels whose data the demo makes must have it.
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo, node_exporter and Prometheus (about 30 s)")
	}
	promBin := need(t, "prometheus")
	nodeExporter := need(t, "prometheus-node-exporter", "node_exporter")
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "bin/sim/gpuprep-prolog")); err != nil {
		missing(t, "bin/sim/gpuprep-prolog missing: run make build (make test does)")
	}
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dash := loadDashboard(t)

	tmp := t.TempDir()
	textfile := filepath.Join(tmp, "textfile")
	if err := os.Mkdir(textfile, 0o755); err != nil {
		t.Fatal(err)
	}
	nePort, promPort := freePort(t), freePort(t)
	for promPort == nePort {
		promPort = freePort(t)
	}
	ne := start(t, tmp, "node_exporter", nodeExporter,
		"--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+textfile,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", nePort))
	config := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: gpuprep-node
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, rules, nePort)), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := start(t, tmp, "prometheus", promBin,
		"--config.file="+config, "--storage.tsdb.path="+filepath.Join(tmp, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	p := api{base: fmt.Sprintf("http://127.0.0.1:%d", promPort)}

	// The demo runs while the daemons start. It takes about 30 s on an
	// idle 2-core machine; the bound only stops a hung demo (a busy CI
	// machine ran it past 90 s).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, "bash", "examples/demo.sh")
	demo.Dir = root
	demo.Env = append(os.Environ(), "DEMO_METRICS_OUT="+textfile, "NO_COLOR=1")
	if out, err := demo.CombinedOutput(); err != nil {
		s := string(out)
		if len(s) > 4000 {
			s = s[len(s)-4000:]
		}
		t.Fatalf("DEMO_METRICS_OUT=%s bash examples/demo.sh: %v\n%s", textfile, err, s)
	}
	// One file per writer.
	for _, f := range []string{"gpuprep-prolog.prom", "gpuprep-epilog.prom", "gpuprep-health.prom"} {
		if _, err := os.Stat(filepath.Join(textfile, f)); err != nil {
			t.Errorf("the demo's metrics have no %s (one file per writer): %v", f, err)
		}
	}

	if err := waitFor(2*time.Minute, func() error {
		for _, d := range []*daemon{ne, prom} {
			if d.exited() {
				return fmt.Errorf("%s exited", d.name)
			}
		}
		return p.ready("/-/ready")
	}); err != nil {
		t.Fatalf("prometheus not ready: %v\n%s\n%s", err, prom.tail(), ne.tail())
	}
	// Three scrapes of the demo's metrics: rate() and increase() have two.
	if err := waitFor(2*time.Minute, func() error {
		v, err := p.query(`min(count_over_time(gpuprep_build_info[1m])) >= 3`)
		if err == nil && len(v) == 0 {
			err = fmt.Errorf("fewer than 3 scrapes with gpuprep_build_info")
		}
		return err
	}); err != nil {
		t.Fatalf("the demo's metrics never reached prometheus: %v\n%s\n%s", err, prom.tail(), ne.tail())
	}
	scraped := time.Now()
	var loaded []rule
	if err := waitFor(time.Minute, func() error {
		rs, err := p.rules()
		if err != nil {
			return err
		}
		loaded = rs
		if len(rs) == 0 {
			return fmt.Errorf("no rules loaded from %s", rules)
		}
		for _, r := range rs {
			if !r.LastEvaluation.After(scraped) {
				return fmt.Errorf("rule %s not evaluated since the data came", r.Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("rules: %v\n%s", err, prom.tail())
	}

	for _, r := range loaded {
		if r.Health != "ok" {
			t.Errorf("%s: rule %s: health %s: %s", rulesFile, r.Name, r.Health, r.LastError)
		}
		if _, err := p.query(r.Query); err != nil {
			t.Errorf("%s: rule %s: %v\n  %s", rulesFile, r.Name, err, r.Query)
		}
	}

	results := map[string][]sample{} // by "title/refId"
	for _, pn := range dash.allPanels() {
		for _, tg := range pn.Targets {
			expr, err := expand(tg.Expr)
			if err != nil {
				t.Errorf("%s: panel %q target %s: %v", dashboardFile, pn.Title, tg.RefID, err)
				continue
			}
			v, err := p.query(expr)
			if err != nil {
				t.Errorf("%s: panel %q target %s: %v\n  %s", dashboardFile, pn.Title, tg.RefID, err, expr)
			}
			results[pn.Title+"/"+tg.RefID] = v
		}
	}
	for _, v := range dash.Templating.List {
		sel := v.selector()
		if sel == "" {
			continue
		}
		expr, err := expand(sel)
		if err == nil {
			_, err = p.query(expr)
		}
		if err != nil {
			t.Errorf("%s: variable %s: %v\n  %s", dashboardFile, v.Name, err, sel)
		}
	}

	// The recording rules that join series make data from real metrics.
	for _, rec := range []string{"check:gpuprep_health_check_status:latest", "instance:gpuprep_health_fatal_checks:count"} {
		if v, err := p.query(rec); err != nil || len(v) == 0 {
			t.Errorf("%s: recording rule %s: no data from the demo's metrics (%v)", rulesFile, rec, err)
		}
	}

	for i, expr := range readmeQueries(t) {
		if _, err := p.query(expr); err != nil {
			t.Errorf("README.md: promql block %d: %v\n  %s", i+1, err, expr)
		}
	}

	for _, w := range demoData {
		v, ok := results[w.title+"/"+w.ref]
		switch {
		case !ok:
			t.Errorf("%s: no panel %q with target %s", dashboardFile, w.title, w.ref)
		case len(v) == 0:
			t.Errorf("%s: panel %q target %s: no data from the demo's metrics", dashboardFile, w.title, w.ref)
		default:
			for _, want := range w.values {
				if !slices.ContainsFunc(v, func(s sample) bool { return s.Metric[w.label] == want }) {
					t.Errorf("%s: panel %q target %s: no series with %s=%q", dashboardFile, w.title, w.ref, w.label, want)
				}
			}
		}
	}

	// node_exporter served every sample of the files (it drops a family's
	// series from a file whose HELP or TYPE line differs from another
	// file's), and every gpuprep series says which program wrote it.
	inFiles, err := countSamples(textfile)
	if err != nil {
		t.Fatal(err)
	}
	scrapedCounts := map[string]int{}
	if v, err := p.query(`count by (__name__) ({__name__=~"gpuprep_.+",job="gpuprep-node"})`); err != nil {
		t.Error(err)
	} else {
		for _, s := range v {
			scrapedCounts[s.Metric["__name__"]] = int(s.value())
		}
	}
	for name, n := range inFiles {
		if scrapedCounts[name] != n {
			t.Errorf("%s: %d samples in the demo's files, %d scraped (HELP and TYPE must be the same in every file)\n%s",
				name, n, scrapedCounts[name], ne.tail())
		}
	}
	if v, err := p.query(`node_textfile_scrape_error{job="gpuprep-node"} != 0 or absent(node_textfile_scrape_error{job="gpuprep-node"})`); err != nil || len(v) > 0 {
		t.Errorf("node_exporter's textfile collector failed on the demo's files (%v)\n%s", err, ne.tail())
	}
	if v, err := p.query(`count by (__name__) ({__name__=~"gpuprep_.+", hook=""})`); err != nil {
		t.Error(err)
	} else if len(v) > 0 {
		var names []string
		for _, s := range v {
			names = append(names, s.Metric["__name__"])
		}
		t.Errorf("gpuprep series without a hook label: %s", strings.Join(names, ", "))
	}
}

// countSamples counts the samples of each metric in dir's *.prom files
// (Prometheus text format: a sample line starts with the metric's name).
func countSamples(dir string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.prom"))
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if i := strings.IndexAny(line, "{ "); i > 0 {
				n[line[:i]]++
			}
		}
	}
	return n, nil
}

var promqlBlockRE = regexp.MustCompile("(?s)```promql\n(.*?)```")

// readmeQueries are the ```promql blocks of this directory's README.md
// (examples/prometheus/README.md), one query each.
func readmeQueries(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range promqlBlockRE.FindAllStringSubmatch(readFile(t, "README.md"), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Errorf("README.md: no promql blocks")
	}
	return out
}
