package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeScontrol installs a script as the only scontrol Drain finds; it
// writes its arguments, one a line, to the returned file and exits with
// code.
func fakeScontrol(t *testing.T, code string) string {
	t.Helper()
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	script := filepath.Join(dir, "scontrol")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + args + "\necho said so\nexit " + code + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	old := scontrolPaths
	scontrolPaths = []string{filepath.Join(dir, "absent"), script}
	t.Cleanup(func() { scontrolPaths = old })
	return args
}

func TestDrainArgv(t *testing.T) {
	args := fakeScontrol(t, "0")
	reason := "gpuprep-prolog: GPU 3 lost; $(reboot) `x` \"q\" " + strings.Repeat("y", 300)
	if err := Drain(context.Background(), "n1", reason); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(args)
	want := "update\nnodename=n1\nstate=drain\nreason=" + reason[:MaxReasonLen] + "\n"
	if string(got) != want {
		t.Errorf("argv\n%q, want\n%q", got, want)
	}
}

func TestDrainFailures(t *testing.T) {
	fakeScontrol(t, "3")
	err := Drain(context.Background(), "n1", "r")
	var se *ScontrolError
	if !errors.As(err, &se) || !strings.Contains(se.Output, "said so") {
		t.Errorf("failed scontrol: %v", err)
	}
	scontrolPaths = []string{filepath.Join(t.TempDir(), "none")}
	if err := Drain(context.Background(), "n1", "r"); !errors.Is(err, ErrNoScontrol) {
		t.Errorf("no scontrol: %v", err)
	}
}
