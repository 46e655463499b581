package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
)

func TestRunDeadline(t *testing.T) {
	code, timedOut := RunDeadline(time.Second, func(ctx context.Context) int { return 7 })
	if code != 7 || timedOut {
		t.Errorf("quick fn: %d %v", code, timedOut)
	}
	// fn sees its context end, and returns in time.
	code, timedOut = RunDeadline(10*time.Millisecond, func(ctx context.Context) int {
		<-ctx.Done()
		return 3
	})
	if code != 3 || timedOut {
		t.Errorf("fn that honours its context: %d %v", code, timedOut)
	}
	// A hung fn does not hold the caller.
	hang := make(chan struct{})
	defer close(hang)
	start := time.Now()
	_, timedOut = RunDeadline(10*time.Millisecond, func(context.Context) int { <-hang; return 0 })
	if !timedOut || time.Since(start) > 5*time.Second {
		t.Errorf("hung fn: timedOut %v after %s", timedOut, time.Since(start))
	}
}

// --log-level's help names the level a program runs at when neither the
// flag nor the site config sets one: the built-in config's.
func TestLogLevelHelp(t *testing.T) {
	var out, errb bytes.Buffer
	fs := NewFlagSet("prog", "usage: prog", &errb)
	var c Common
	c.Register(fs)
	Parse(fs, &c, []string{"--help"}, &out)
	def := config.Default().General.LogLevel
	want := "debug|info|warn|error (default: the config's general.log_level, " + def + " unless it sets one)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("--help lacks %q:\n%s", want, out.String())
	}
}

func TestLevel(t *testing.T) {
	cfg := &config.Config{}
	cfg.General.LogLevel = "info"
	for _, c := range []struct {
		flag string
		cfg  *config.Config
		want slog.Level
	}{
		{"", nil, slog.LevelWarn},
		{"", cfg, slog.LevelInfo},
		{"DEBUG", cfg, slog.LevelDebug},
		{"error", cfg, slog.LevelError},
		{"warning", nil, slog.LevelWarn},
	} {
		c2 := Common{LogLevel: c.flag}
		if got, err := c2.Level(c.cfg); err != nil || got != c.want {
			t.Errorf("--log-level %q: %v %v, want %v", c.flag, got, err, c.want)
		}
	}
	if _, err := (&Common{LogLevel: "loud"}).Level(nil); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("bad level: %v", err)
	}
}

func TestFailIsOneLine(t *testing.T) {
	var b bytes.Buffer
	if code := Fail(&b, "p", ExitMismatch, errors.New("a\nb")); code != ExitMismatch || b.String() != "p: a; b\n" {
		t.Errorf("%d %q", code, b.String())
	}
}

func TestPlaceholder(t *testing.T) {
	var out, errb bytes.Buffer
	e := Env{Args: []string{"--odd", "--", "true"}, Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb}
	if code := Placeholder("prog", "usage: prog", "issue 9", e); code != ExitMismatch || !strings.HasPrefix(errb.String(), "prog: not implemented yet (issue 9)") {
		t.Errorf("%d %q", code, errb.String())
	}
	out.Reset()
	e.Args = []string{"--version"}
	if code := Placeholder("prog", "usage: prog", "issue 9", e); code != ExitOK || out.String() != cmdenv.VersionLine("prog")+"\n" {
		t.Errorf("--version: %d %q", code, out.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	WriteJSON(&b, map[string]int{"a": 1})
	if b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("%q", b.String())
	}
}
