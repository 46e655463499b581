// Package glibcfloor checks the glibc floor of the EL8 build: the programs
// packaging/el8/build.sh writes to bin/el8 must need no GLIBC_ symbol
// version above 2.28 (RHEL/Rocky 8), or they do not start there. It also
// checks that they behave as the ordinary build does, NVML included.
package glibcfloor

import (
	"os"
	"path/filepath"
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
