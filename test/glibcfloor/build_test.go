package glibcfloor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gpuprep/internal/testroot"
)

// el8Programs are the cgo programs packaging/el8/build.sh builds; srunwrap
// is static (no libc at all) and has no EL8 build.
var el8Programs = []string{"gpuprep-prolog", "gpuprep-epilog", "gpuprep-gres", "gpuprep-health"}

// nozigStatus is build.sh's exit status when zig cannot be installed (no
// npm, no registry, another host architecture).
const nozigStatus = 3

var (
	el8Once sync.Once
	el8Root string
	el8Err  error
	el8Skip string // why zig could not be had, outside CI
)

// el8Bin returns bin/el8/<name>, running packaging/el8/build.sh first (once
// per test binary) when any EL8 program is missing or older than the Go
// sources, go.mod/go.sum or packaging/el8 (its README aside). When zig cannot be installed the
// test is skipped, except on CI (CI=true), where that is a failure.
func el8Bin(t *testing.T, name string) string {
	t.Helper()
	el8Once.Do(func() {
		el8Root, el8Err = testroot.ModuleRoot()
		if el8Err != nil {
			return
		}
		stale, why := el8Stale(el8Root)
		if !stale {
			return
		}
		t.Logf("building bin/el8 (%s)", why)
		el8Skip, el8Err = buildEL8(t, el8Root, nil)
	})
	if el8Err != nil {
		t.Fatal(el8Err)
	}
	if el8Skip != "" {
		t.Skip(el8Skip)
	}
	return filepath.Join(el8Root, "bin", "el8", name)
}

// buildEL8 runs packaging/el8/build.sh with env added. skip is set when zig
// could not be installed outside CI; on CI (CI=true) that is an error.
func buildEL8(t *testing.T, root string, env []string) (skip string, err error) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("bash", "packaging/el8/build.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("bash packaging/el8/build.sh %s took %s:\n%s", strings.Join(env, " "), time.Since(start).Round(time.Second), out)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &ee) && ee.ExitCode() == nozigStatus && os.Getenv("CI") != "true":
		return "zig could not be installed for the EL8 build (packaging/el8/build.sh exit 3; output above)", nil
	case errors.As(err, &ee) && ee.ExitCode() == nozigStatus:
		return "", errors.New("packaging/el8/build.sh could not install zig; CI=true makes this a failure")
	default:
		return "", fmt.Errorf("packaging/el8/build.sh: %w", err)
	}
}

// el8Stale says whether bin/el8 needs building, and why.
func el8Stale(root string) (bool, string) {
	oldest := time.Time{}
	for _, p := range el8Programs {
		fi, err := os.Stat(filepath.Join(root, "bin", "el8", p))
		if err != nil {
			return true, "bin/el8/" + p + " missing"
		}
		if oldest.IsZero() || fi.ModTime().Before(oldest) {
			oldest = fi.ModTime()
		}
	}
	newer := ""
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || newer != "" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "node_modules", "roots":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".c") && !strings.HasSuffix(p, ".h") &&
			rel != "go.mod" && rel != "go.sum" &&
			(!strings.HasPrefix(rel, "packaging/el8/") || strings.HasSuffix(rel, ".md")) {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(oldest) {
			newer = rel
		}
		return nil
	})
	if newer != "" {
		return true, newer + " is newer than bin/el8"
	}
	return false, ""
}

// pairLDFlags are the -ldflags of both builds pairBins compares: fixed,
// since Go does not record -ldflags in a -trimpath program.
const pairLDFlags = "-s -w -X gpuprep/lib/cmdenv.Version=0.0.0-glibcfloor -X gpuprep/lib/cmdenv.Commit=test"

var (
	pairOnce sync.Once
	pairDir  string
	pairErr  error
	pairSkip string
)

// pairBins returns the EL8 build and the ordinary build of one program
// (gpuprep-gres, gpuprep-prolog, gpuprep-epilog, gpuprep-health), built once per test binary
// into a temporary directory with the same -trimpath and -ldflags, so that
// they differ only in their C toolchain. bin/el8 is left alone: make
// package may be reading it.
func pairBins(t *testing.T, name string) (el8, ref string) {
	t.Helper()
	pairOnce.Do(func() {
		root, err := testroot.ModuleRoot()
		if err != nil {
			pairErr = err
			return
		}
		if pairDir, pairErr = os.MkdirTemp("", "gpuprep-glibcfloor-"); pairErr != nil {
			return
		}
		pairSkip, pairErr = buildEL8(t, root, []string{
			"GPUPREP_EL8_OUT=" + filepath.Join(pairDir, "el8"), "GPUPREP_LDFLAGS=" + pairLDFlags})
		if pairSkip != "" || pairErr != nil {
			return
		}
		for _, p := range el8Programs {
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags", pairLDFlags,
				"-o", filepath.Join(pairDir, "ref", p), "./"+strings.TrimPrefix(p, "gpuprep-"))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations", "CGO_ENABLED=1")
			if b, err := cmd.CombinedOutput(); err != nil {
				pairErr = fmt.Errorf("go build %s: %w\n%s", p, err, b)
				return
			}
		}
	})
	if pairErr != nil {
		t.Fatal(pairErr)
	}
	if pairSkip != "" {
		t.Skip(pairSkip)
	}
	return filepath.Join(pairDir, "el8", name), filepath.Join(pairDir, "ref", name)
}

// TestMain removes pairBins' programs (some 60 MB) when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if pairDir != "" {
		os.RemoveAll(pairDir)
	}
	os.Exit(code)
}
