package hookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/hooktest"
	"gpuprep/internal/testroot"
)

// mainRun runs the prolog or epilog command with a Slurm-like environment.
func mainRun(op string, env map[string]string, args ...string) (int, string, string) {
	cmd := Prolog
	if op == "epilog" {
		cmd = Epilog
	}
	return hooktest.Run(cmd, env, args...)
}

func TestMainBadInputAndSafety(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Shared(t, "h200x2")
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"), 0o644)
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[general]\nlog_file = \"\"\n[profiles.default]\nvm_swappiness = 500\n"), 0o644)
	realSpool := filepath.Join(dir, "spool")
	os.Mkdir(realSpool, 0o700)
	link := filepath.Join(dir, "spool-link")
	os.Symlink(realSpool, link)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	env := map[string]string{"SLURM_JOB_ID": "42", "SLURM_JOB_USER": "bob", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	base := []string{"--root", root, "--gpu-backend", "procfs"}

	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"check-config good", env, []string{"--config", good, "--check-config"}, 0, ""},
		{"check-config bad", env, []string{"--config", bad, "--check-config"}, 2, "bad.toml:4:"},
		{"bad config in a run", env, []string{"--config", bad, "--state-dir", realSpool}, 2, "vm_swappiness = 500"},
		{"state dir is a symlink", env, []string{"--config", good, "--state-dir", link}, 1, "gpuprep-prolog: state dir " + link + " is a symlink; refusing"},
		{"--health: state dir is a symlink", env, []string{"--config", good, "--state-dir", link, "--health"}, 1, "gpuprep-prolog: state dir " + link + " is a symlink; refusing"},
		{"state dir writable by others", env, []string{"--config", good, "--state-dir", open}, 1, "writable"},
		{"no job id", map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}, []string{"--config", good, "--state-dir", realSpool}, 2, "SLURM_JOB_ID"},
		{"odd GPU list", map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_GPUS": "0,x", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}, []string{"--config", good, "--state-dir", realSpool}, 2, "SLURM_JOB_GPUS"},
		{"odd job id from slurmd", map[string]string{"SLURM_JOB_ID": "abc", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}, []string{"--config", good, "--state-dir", realSpool}, 2, `gpuprep-prolog: SLURM_JOB_ID="abc": not a job id`},
		{"odd --job-id names the flag", env, []string{"--config", good, "--state-dir", realSpool, "--job-id", "abc"}, 2, `gpuprep-prolog: --job-id="abc": not a job id`},
		{"odd --job-gpus names the flag", env, []string{"--config", good, "--state-dir", realSpool, "--job-gpus", "0,x"}, 2, `gpuprep-prolog: --job-gpus="0,x": not a GPU index list`},
		{"a user's typo never fails", map[string]string{"SLURM_JOB_ID": "2", "SLURM_JOB_COMMENT": "gpuprep=benchmrak", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}, []string{"--config", good, "--state-dir", realSpool}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := mainRun("prolog", c.env, append(append([]string{}, base...), c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, c.code, stderr, c.stderr)
			}
			// Under slurmd the first stderr line is the drain reason:
			// nothing else may be written there.
			if c.code != 0 && (strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpuprep-prolog: ")) {
				t.Errorf("stderr is not one reason line: %q", stderr)
			}
		})
	}
}

func TestMainMetricsAndReport(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Unpack(t, "h200x2")
	metrics := filepath.Join(dir, "textfile")
	os.Mkdir(metrics, 0o755)
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \""+metrics+"\"\n[profiles.default]\nvm_swappiness = 10\n"), 0o644)
	spool := filepath.Join(dir, "spool")
	args := []string{"--root", root, "--gpu-backend", "procfs", "--config", cfg, "--state-dir", spool}
	env := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "carol", "SLURMD_NODENAME": "vm", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	if code, _, stderr := mainRun("prolog", env, args...); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(root, "proc/sys/vm/swappiness"), []byte("77\n"), 0o644)
	env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
	if code, _, stderr := mainRun("epilog", env, args...); code != 0 {
		t.Fatalf("epilog: %d %s", code, stderr)
	}
	// Each writer its own file, and no series in two of them (node_exporter
	// fails a scrape that has one twice).
	var prom strings.Builder
	series := map[string]string{}
	for _, name := range []string{"gpuprep-prolog.prom", "gpuprep-epilog.prom"} {
		b, err := os.ReadFile(filepath.Join(metrics, name))
		if err != nil {
			t.Fatal(err)
		}
		prom.Write(b)
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			s := line[:strings.LastIndexByte(line, ' ')]
			if other, dup := series[s]; dup {
				t.Errorf("%s is in %s and %s", s, other, name)
			}
			series[s] = name
		}
	}
	host, _ := os.Hostname()
	node := `Hostname="` + host + `",slurm_node="vm"` // SLURMD_NODENAME
	for _, want := range []string{`gpuprep_drift_events_total{hook="epilog",kind="drift",knob="vm_swappiness",` + node + `} 1`, `gpuprep_last_run_success{hook="prolog",` + node + `} 1`, `gpuprep_last_run_success{hook="epilog",` + node + `} 1`} {
		if !strings.Contains(prom.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, prom.String())
		}
	}
	code, out, _ := mainRun("epilog", nil, "--config", cfg, "--state-dir", spool, "--report")
	if code != 0 || !strings.Contains(out, "vm_swappiness") || !strings.Contains(out, "carol") {
		t.Errorf("--report: %d\n%s", code, out)
	}
	code, out, _ = mainRun("epilog", nil, "--config", cfg, "--state-dir", spool, "--report", "--json")
	if code != 0 || !strings.Contains(out, `"found": "77"`) && !strings.Contains(out, `"found":"77"`) {
		t.Errorf("--report --json: %d\n%s", code, out)
	}
}

// A dry run writes nothing: no spool (not even its folder or lock file), no
// log file, no metrics, even on a node whose spool never existed.
func TestDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Shared(t, "h200x2")
	metrics := filepath.Join(dir, "textfile")
	os.Mkdir(metrics, 0o755)
	logFile := filepath.Join(dir, "log", "gpuprep.log")
	os.Mkdir(filepath.Dir(logFile), 0o755)
	cfg := filepath.Join(dir, "g.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_level = \"debug\"\nlog_file = \""+logFile+"\"\nmetrics_dir = \""+metrics+"\"\n[profiles.default]\nvm_swappiness = 10\n"), 0o644)
	spool := filepath.Join(dir, "var", "lib", "gpuprep")
	env := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "carol"}
	for _, op := range []string{"prolog", "epilog"} {
		code, out, stderr := mainRun(op, env, "--root", root, "--gpu-backend", "procfs", "--config", cfg, "--state-dir", spool, "--dry-run")
		if code != 0 || !strings.Contains(out, "dry run") {
			t.Fatalf("%s --dry-run: %d\n%s\n%s", op, code, out, stderr)
		}
	}
	// An absent spool is a mistyped --state-dir, not a node without
	// drift: bad input naming it, and --report creates nothing either.
	code, out, stderr := mainRun("epilog", nil, "--config", cfg, "--state-dir", spool, "--report")
	if want := "gpuprep-epilog: state dir " + spool + " (--state-dir) does not exist: no prolog has kept a spool there\n"; code != 2 || out != "" || stderr != want {
		t.Errorf("--report on an absent spool: exit %d, stdout %q, stderr %q, want exit 2 and %q", code, out, stderr, want)
	}
	for _, p := range []string{filepath.Join(dir, "var"), logFile} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the dry run created %s (%v)", p, err)
		}
	}
	if ents, _ := os.ReadDir(metrics); len(ents) != 0 {
		t.Errorf("the dry run wrote metrics: %v", ents)
	}
}

// A failing hook prints its error once: by hand on the terminal (the log
// line on stderr is not repeated), and under slurmd as the one stderr line,
// the drain reason.
func TestFailurePrintedOnce(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Shared(t, "h200x2")
	cfg := filepath.Join(dir, "g.toml")
	// The admin's default profile requires a knob this VM root lacks
	// (no cpufreq): a node error.
	os.WriteFile(cfg, []byte("[general]\nlog_level = \"info\"\nlog_file = \"\"\nmetrics_dir = \"\"\n"+
		"[profiles.default]\ncpu_governor = \"performance\"\nrequired = [\"cpu_governor\"]\n"), 0o644)
	args := []string{"--root", root, "--gpu-backend", "procfs", "--config", cfg, "--state-dir", filepath.Join(dir, "spool")}
	const msg = "required knob cpu_governor"
	env := map[string]string{"SLURM_JOB_ID": "5"}
	code, _, stderr := mainRun("prolog", env, args...)
	if code == 0 || strings.Count(stderr, msg) != 1 || !strings.Contains(stderr, "gpuprep-prolog: ") {
		t.Errorf("by hand: exit %d, stderr should name the error once:\n%s", code, stderr)
	}
	env["SLURM_SCRIPT_CONTEXT"] = "prolog_slurmd"
	code, _, stderr = mainRun("prolog", env, args...)
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpuprep-prolog: ") || !strings.Contains(stderr, msg) {
		t.Errorf("under slurmd: exit %d, stderr should be the one reason line:\n%s", code, stderr)
	}
}

// -h and --help print the usage on stdout and exit 0; a bad flag is one
// line on stderr and exit 2.
func TestHelp(t *testing.T) {
	for _, op := range []string{"prolog", "epilog"} {
		for _, arg := range []string{"-h", "--help"} {
			code, out, stderr := mainRun(op, nil, arg)
			if code != 0 || !strings.HasPrefix(out, "usage: gpuprep-"+op) || !strings.Contains(out, "--dry-run") || stderr != "" {
				t.Errorf("%s %s: exit %d stdout %q stderr %q", op, arg, code, out, stderr)
			}
		}
		code, out, stderr := mainRun(op, nil, "--bogus")
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s --bogus: exit %d stdout %q stderr %q", op, code, out, stderr)
		}
	}
}
