package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// A production build (no -tags gpuprep_crashpoints, as make build and make
// install make them) holds no crash point: no symbol of
// lib/crashpoint (its Hit calls compiled to nothing) and no
// GPUPREP_CRASH_* variable name, so no environment can make it kill
// itself. The crashpoints build of the hooks holds both, which shows the
// check can fail.
func TestCrashpointsNotInProductionBuild(t *testing.T) {
	t.Parallel()
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pkgs := []string{"prolog", "epilog", "gres", "srunwrap"}
	cmd := exec.Command("go", "build", "-o", dir+"/")
	for _, p := range pkgs {
		cmd.Args = append(cmd.Args, "./"+p)
	}
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	check := func(path string, want bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := exec.Command("go", "tool", "nm", path).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", path, err)
		}
		if len(syms) < 1000 {
			t.Fatalf("go tool nm %s: only %d bytes of symbols", path, len(syms))
		}
		hasEnv := bytes.Contains(b, []byte("GPUPREP_CRASH_"))
		hasSym := strings.Contains(string(syms), "gpuprep/lib/crashpoint.")
		if hasEnv != want || hasSym != want {
			t.Errorf("%s: holds GPUPREP_CRASH_: %v, crashpoint symbols: %v; want %v", path, hasEnv, hasSym, want)
		}
	}
	for _, p := range pkgs {
		check(filepath.Join(dir, p), false)
	}
	check(crashBin(t, "gpuprep-prolog"), true)
}
