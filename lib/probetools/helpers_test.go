package probetools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fake writes an executable shell script named name into dir (made when
// missing) and returns its path. body is the script after "#!/bin/sh";
// "$DATA" in it is replaced by the absolute path of testdata.
func fake(t *testing.T, dir, name, body string) string {
	t.Helper()
	data, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	script := "#!/bin/sh\n" + strings.ReplaceAll(body, "$DATA", data) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// setVar sets *p to v for the test.
func setVar[T any](t *testing.T, p *T, v T) {
	t.Helper()
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// quick makes the loopback's and kill's waits short for the test.
func quick(t *testing.T) {
	setVar(t, &serverWait, 50*time.Millisecond)
	setVar(t, &serverLinger, 300*time.Millisecond)
	setVar(t, &killGrace, 300*time.Millisecond)
}

// gone says whether the process pid has ended (absent, or a zombie no one
// reaps, as under a container's init).
func gone(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// waitGone waits up to 3 s for the pid written in file to end.
func waitGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the fake wrote no pid: %v", err)
	}
	pid := strings.TrimSpace(string(b))
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if gone(pid) {
			return
		}
	}
	t.Errorf("process %s (the fake's child) still runs", pid)
}

func ptr(b bool) *bool { return &b }

func passString(p *bool) string {
	if p == nil {
		return "nil"
	}
	if *p {
		return "true"
	}
	return "false"
}
