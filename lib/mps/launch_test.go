package mps

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/host"
)

// TestUnitName: the unit is named after the daemon's directory, a user
// name's odd characters escaped as systemd-escape does.
func TestUnitName(t *testing.T) {
	for user, want := range map[string]string{
		"alice":    "gpuprep-mps-alice-0123456789ab.service",
		"j.doe@ad": `gpuprep-mps-j.doe\x40ad-0123456789ab.service`,
		"j-doe":    `gpuprep-mps-j\x2ddoe-0123456789ab.service`,
	} {
		p, err := Dirs("/run/gpuprep/mps", user, "0123456789ab")
		if err != nil {
			t.Fatal(err)
		}
		if got := UnitName(Daemon{Paths: p}); got != want {
			t.Errorf("UnitName(%s) = %q, want %q", user, got, want)
		}
	}
}

// TestCgroupfsFallsBack: where no cgroup v2 can be made (here a fixture
// root without one), Cgroupfs still starts the daemon, as the caller's
// child, and warns naming the cgroup it runs in and why; Quit and Done
// then leave nothing.
func TestCgroupfsFallsBack(t *testing.T) {
	e := newExec(t)
	var logs bytes.Buffer
	e.Log = slog.New(slog.NewTextHandler(&logs, nil))
	// A fixture's /sys/fs/cgroup with cgroup.controllers, as a cgroup v2
	// mount shows it, but no cgroup file system under it.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset cpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Launcher = Cgroupfs{Root: host.NewRoot(root)}
	d := newDaemon(t)
	stopAll(t, e, d)
	ctx := context.Background()
	pid, err := e.Start(ctx, d)
	if err != nil || pid <= 0 {
		t.Fatalf("Start: %d, %v", pid, err)
	}
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "is not a cgroup v2 file system") || !strings.Contains(got, "runs in this process's cgroup") {
		t.Errorf("log:\n%s\nwant a warning naming the cgroup and why", got)
	}
	if _, err := e.Quit(ctx, d, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.Done(ctx, d); err != nil {
		t.Errorf("Done: %v", err)
	}
	if left, err := e.Left(d); len(left) != 0 || err != nil {
		t.Errorf("Left = %v, %v", left, err)
	}
}
