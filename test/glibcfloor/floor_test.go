// Package glibcfloor checks the glibc floor of the EL8 build: the programs
// packaging/el8/build.sh writes to bin/el8 must need no GLIBC_ symbol
// version above 2.28 (RHEL/Rocky 8), or they do not start there. It also
// checks that they behave as the ordinary build does, NVML included.
package glibcfloor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// floor is the newest glibc the EL8 programs may need: RHEL/Rocky 8's.
const floor = "GLIBC_2.28"

// TestEL8GlibcFloor fails when a bin/el8 program needs a GLIBC_ version
// above 2.28, naming the program, the version and the symbols bound to it.
func TestEL8GlibcFloor(t *testing.T) {
	for _, p := range el8Programs {
		path := el8Bin(t, p)
		needs, err := glibcNeeds(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(needs) == 0 {
			t.Errorf("bin/el8/%s needs no GLIBC_ version at all: not the dynamically linked cgo build this test expects", p)
			continue
		}
		for _, n := range needs {
			if above(n.Version, floor) {
				t.Errorf("bin/el8/%s needs %s, above the %s floor (RHEL/Rocky 8): it would not start there", p, n, floor)
			}
		}
		t.Logf("bin/el8/%s: highest glibc version needed: %s", p, highest(needs))
	}
}

// TestNormalBuildFloor logs the glibc floor of the ordinary builds in bin/
// (make build), which follow this machine's glibc. It judges nothing.
func TestNormalBuildFloor(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(el8Programs, "srunwrap") {
		path := filepath.Join(root, "bin", p)
		if _, err := os.Stat(path); err != nil {
			t.Logf("bin/%s: not built (make build): %v", p, err)
			continue
		}
		needs, err := glibcNeeds(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(needs) == 0 {
			t.Logf("bin/%s: needs no glibc (static)", p)
			continue
		}
		t.Logf("bin/%s: highest glibc version needed: %s", p, highest(needs))
		for _, n := range needs {
			if above(n.Version, floor) {
				t.Logf("bin/%s: needs %s", p, n)
			}
		}
	}
}

// TestAbove pins the version comparison the floor check relies on.
func TestAbove(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"GLIBC_2.2.5", false},
		{"GLIBC_2.3.4", false},
		{"GLIBC_2.28", false},
		{"GLIBC_2.29", true},
		{"GLIBC_2.34", true},
		{"GLIBC_3.0", true},
		{"GLIBC_PRIVATE", true},
	} {
		if got := above(c.v, floor); got != c.want {
			t.Errorf("above(%q, %q) = %v, want %v", c.v, floor, got, c.want)
		}
	}
	if got := highest([]glibcNeed{{Version: "GLIBC_2.3.2"}, {Version: "GLIBC_2.14"}, {Version: "GLIBC_2.2.5"}}); got != "GLIBC_2.14" {
		t.Errorf("highest = %q, want GLIBC_2.14", got)
	}
}

// TestEL8StartsInOlderRoot runs each bin/el8 program's --version in a
// chroot of an older distribution's root, when GPUPREP_OLD_ROOT names one
// (as root; e.g. `debootstrap --variant=minbase bullseye /tmp/bullseye`,
// glibc 2.31, the oldest Debian root these machines can fetch). No glibc
// 2.28 userland is reachable here, so this shows the programs start on a
// glibc older than the build machine's, not on EL8 itself.
func TestEL8StartsInOlderRoot(t *testing.T) {
	old := os.Getenv("GPUPREP_OLD_ROOT")
	if old == "" {
		t.Skip("GPUPREP_OLD_ROOT is not set (a debootstrapped root to chroot into)")
	}
	dir, err := os.MkdirTemp(old, "gpuprep-el8-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, p := range el8Programs {
		b, err := os.ReadFile(el8Bin(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("chroot", old, "/"+filepath.Base(dir)+"/"+p, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), p+" ") {
			t.Errorf("chroot %s %s --version: %v\n%s", old, p, err, out)
			continue
		}
		t.Logf("in %s: %s", old, strings.TrimSpace(string(out)))
	}
}
