package glibcfloor

import (
	"debug/buildinfo"
	"errors"
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
var el8Programs = []string{"gpuprep-prolog", "gpuprep-epilog", "gpuprep-gres"}

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
// sources, go.mod/go.sum or packaging/el8. When zig cannot be installed the
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
		t.Logf("building bin/el8 (%s): bash packaging/el8/build.sh", why)
		start := time.Now()
		cmd := exec.Command("bash", "packaging/el8/build.sh")
		cmd.Dir = el8Root
		out, err := cmd.CombinedOutput()
		t.Logf("packaging/el8/build.sh took %s:\n%s", time.Since(start).Round(time.Second), out)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == nozigStatus && os.Getenv("CI") != "true":
			el8Skip = "zig could not be installed for the EL8 build (packaging/el8/build.sh exit 3; output above)"
		case errors.As(err, &ee) && ee.ExitCode() == nozigStatus:
			el8Err = errors.New("packaging/el8/build.sh could not install zig; CI=true makes this a failure")
		default:
			el8Err = errors.New("packaging/el8/build.sh failed: " + err.Error())
		}
	})
	if el8Err != nil {
		t.Fatal(el8Err)
	}
	if el8Skip != "" {
		t.Skip(el8Skip)
	}
	return filepath.Join(el8Root, "bin", "el8", name)
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
			rel != "go.mod" && rel != "go.sum" && !strings.HasPrefix(rel, "packaging/el8/") {
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

// referenceBin builds the program in ./<dir> the ordinary way (this
// machine's C compiler and glibc) into a temporary directory, with the
// -trimpath and -ldflags recorded in the EL8 binary el8, so that the two
// differ only in their C toolchain.
func referenceBin(t *testing.T, el8, dir string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(el8)
	if err != nil {
		t.Fatalf("reading the Go build settings of %s: %v", el8, err)
	}
	args := []string{"build"}
	for _, s := range info.Settings {
		switch s.Key {
		case "-trimpath":
			if s.Value == "true" {
				args = append(args, "-trimpath")
			}
		case "-ldflags":
			args = append(args, "-ldflags", s.Value)
		case "-tags":
			args = append(args, "-tags", s.Value)
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(el8))
	args = append(args, "-o", out, "./"+dir)
	cmd := exec.Command("go", args...)
	cmd.Dir = el8Root
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations", "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}
