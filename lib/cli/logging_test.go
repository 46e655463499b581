package cli

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSyslog records what each priority got.
type fakeSyslog struct {
	got    []string // "<priority> <message>"
	closed bool
}

func (f *fakeSyslog) add(p, m string) error  { f.got = append(f.got, p+" "+m); return nil }
func (f *fakeSyslog) Debug(m string) error   { return f.add("debug", m) }
func (f *fakeSyslog) Info(m string) error    { return f.add("info", m) }
func (f *fakeSyslog) Warning(m string) error { return f.add("warning", m) }
func (f *fakeSyslog) Err(m string) error     { return f.add("err", m) }
func (f *fakeSyslog) Close() error           { f.closed = true; return nil }

func withFakeSyslog(t *testing.T) *fakeSyslog {
	fake := &fakeSyslog{}
	old := openSyslog
	openSyslog = func(string) (SyslogWriter, error) { return fake, nil }
	t.Cleanup(func() { openSyslog = old })
	return fake
}

// Each level reaches syslog at its own priority (journalctl -p warning shows
// a failed prolog), without the text handler's time= (syslog stamps it).
func TestSyslogPriorities(t *testing.T) {
	fake := withFakeSyslog(t)
	var stderr bytes.Buffer
	logs := SinkLogger("gpuprep-prolog", "", slog.LevelDebug, false, false, &stderr)
	log := logs.Log.With("job", 7)
	log.Debug("d")
	log.Info("i", "k", "v")
	log.Warn("w")
	log.Error("prolog failed", "err", "boom")
	logs.Close()
	want := []string{
		`debug level=DEBUG msg=d job=7`,
		`info level=INFO msg=i job=7 k=v`,
		`warning level=WARN msg=w job=7`,
		`err level=ERROR msg="prolog failed" job=7 err=boom`,
	}
	if fmt.Sprint(fake.got) != fmt.Sprint(want) {
		t.Errorf("syslog got\n%q\nwant\n%q", fake.got, want)
	}
	if !fake.closed {
		t.Error("syslog not closed")
	}
	if strings.Count(stderr.String(), "time=") != 4 {
		t.Errorf("stderr keeps its time stamps:\n%s", stderr.String())
	}
}

// The level applies to syslog too; Daemon leaves stderr out; noSyslog and
// quietStderr drop those sinks; the log file keeps time stamps.
func TestSinkLoggerSinks(t *testing.T) {
	fake := withFakeSyslog(t)
	var stderr bytes.Buffer
	file := filepath.Join(t.TempDir(), "gpuprep.log")
	logs := SinkLogger("p", file, slog.LevelWarn, false, false, &stderr)
	logs.Log.Info("hidden")
	logs.Daemon.Error("only the daemon sinks")
	logs.Close()
	if len(fake.got) != 1 || !strings.HasPrefix(fake.got[0], "err ") {
		t.Errorf("syslog: %q", fake.got)
	}
	if stderr.Len() != 0 {
		t.Errorf("Daemon wrote to stderr: %q", stderr.String())
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "time=") || !strings.Contains(string(b), "prog=p") || strings.Contains(string(b), "hidden") {
		t.Errorf("log file: %q", b)
	}

	fake.got = nil
	logs = SinkLogger("p", "", slog.LevelInfo, true, true, &stderr)
	logs.Log.Error("nowhere")
	logs.Close()
	if len(fake.got) != 0 || stderr.Len() != 0 {
		t.Errorf("noSyslog/quietStderr: syslog %q stderr %q", fake.got, stderr.String())
	}
}

// A log file that cannot be opened is one warning, on syslog and stderr,
// naming the file and the error; the run logs on to those. Under slurmd
// (quiet stderr) the warning goes to syslog alone.
func TestLogFileCannotBeOpened(t *testing.T) {
	fake := withFakeSyslog(t)
	file := filepath.Join(t.TempDir(), "no-such-dir", "gpuprep.log")
	var stderr bytes.Buffer
	logs := SinkLogger("p", file, slog.LevelWarn, false, false, &stderr)
	logs.Log.Warn("after")
	logs.Close()
	want := "log file " + file + " (general.log_file) cannot be opened: no such file or directory; logging to syslog and stderr only"
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN msg=\""+want+"\"") || !strings.Contains(lines[1], "msg=after") {
		t.Errorf("stderr, want the warning then the run's log:\n%s", stderr.String())
	}
	if len(fake.got) != 2 || !strings.HasPrefix(fake.got[0], "warning ") || !strings.Contains(fake.got[0], want) {
		t.Errorf("syslog: %q", fake.got)
	}

	fake.got = nil
	stderr.Reset()
	logs = SinkLogger("p", file, slog.LevelWarn, true, false, &stderr)
	logs.Close()
	if stderr.Len() != 0 || len(fake.got) != 1 || !strings.Contains(fake.got[0], "cannot be opened: no such file or directory; logging to syslog only") {
		t.Errorf("under slurmd: stderr %q syslog %q", stderr.String(), fake.got)
	}
}

// -h and --help print the usage on stdout and exit 0; a bad flag goes to
// stderr with exit 2.
func TestParseHelpOnStdout(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var out, errb bytes.Buffer
		fs := NewFlagSet("prog", "usage: prog [flags]", &errb)
		var c Common
		c.Register(fs)
		done, code := Parse(fs, &c, []string{arg}, &out)
		if !done || code != ExitOK || !strings.HasPrefix(out.String(), "usage: prog [flags]\n") || !strings.Contains(out.String(), "--config") || errb.Len() != 0 {
			t.Errorf("%s: done %v code %d stdout %q stderr %q", arg, done, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	fs := NewFlagSet("prog", "usage: prog", &errb)
	var c Common
	c.Register(fs)
	if done, code := Parse(fs, &c, []string{"--nope"}, &out); !done || code != ExitBadInput || out.Len() != 0 || !strings.HasPrefix(errb.String(), "prog: unknown flag: --nope") {
		t.Errorf("bad flag: %v %d stdout %q stderr %q", done, code, out.String(), errb.String())
	}
}

func TestPlaceholderHelp(t *testing.T) {
	var out, errb bytes.Buffer
	e := Env{Args: []string{"--help"}, Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb}
	if code := Placeholder("prog", "usage: prog", "issue 9", e); code != ExitOK || !strings.HasPrefix(out.String(), "usage: prog") || errb.Len() != 0 {
		t.Errorf("%d stdout %q stderr %q", code, out.String(), errb.String())
	}
}
