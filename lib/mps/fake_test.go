package mps

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/internal/mpssim"
)

// The test binary plays nvidia-cuda-mps-control and nvidia-cuda-mps-server
// (package gpuprep/internal/mpssim, which describes how, and the marker
// files fake-server, fake-ignore-quit and fake-fail-start that steer it)
// when it is started under either name (symlinks that fakeBin makes).
// Every fake process ends by itself after fakeLife, so a failed test
// leaves nothing running for long.
const fakeLife = 60 * time.Second

// TestMain runs the fake when started under its names, the tests
// otherwise, as a child subreaper: the fake daemons, which leave their -d
// parent, stay its descendants, and it reaps what exited once the tests
// are done (some sandboxes' init reaps nothing).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case ControlName, ServerName:
		os.Exit(mpssim.Main(os.Args, fakeEnv))
	}
	if dir := os.Getenv(removeChildEnv); dir != "" {
		os.Exit(removeChild(dir))
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	code := m.Run()
	for {
		if pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); pid <= 0 || err != nil {
			break
		}
	}
	os.Exit(code)
}

// fakeEnv is the fake's environment, with fakeLife as its life unless
// GPUPREP_MPSSIM_LIFE says otherwise.
func fakeEnv(k string) string {
	if v := os.Getenv(k); v != "" || k != mpssim.LifeEnv {
		return v
	}
	return fakeLife.String()
}

// TestSimNames: the simulator answers to lib/mps's program names and
// reads its variables (it cannot import this package to share them).
func TestSimNames(t *testing.T) {
	if mpssim.ControlName != ControlName || mpssim.ServerName != ServerName || mpssim.PipeEnv != PipeEnv || mpssim.LogEnv != LogEnv {
		t.Errorf("mpssim names %q %q %q %q; lib/mps's %q %q %q %q", mpssim.ControlName, mpssim.ServerName, mpssim.PipeEnv, mpssim.LogEnv, ControlName, ServerName, PipeEnv, LogEnv)
	}
}

// fakeBin returns the path of a fake nvidia-cuda-mps-control, next to a
// fake nvidia-cuda-mps-server: symlinks to the test binary.
func fakeBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{ControlName, ServerName} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, ControlName)
}
