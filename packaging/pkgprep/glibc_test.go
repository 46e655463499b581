package main

import (
	"os/exec"
	"testing"
)

func TestGlibcOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"2.5", "2.28", true}, {"2.28", "2.34", true}, {"2.2.5", "2.3", true},
		{"2.34", "2.28", false}, {"2.28", "2.28", false}, {"2.3", "2.3.4", true},
	} {
		a, _ := parseGlibc(tc.a)
		b, _ := parseGlibc(tc.b)
		if got := a.less(b); got != tc.less {
			t.Errorf("%s < %s: %v, want %v", tc.a, tc.b, got, tc.less)
		}
	}
	if _, err := parseGlibc("PRIVATE"); err == nil {
		t.Error("GLIBC_PRIVATE parsed as a version")
	}
}

// TestGlibcNeedOfADynamicProgram: a program linked against glibc (sh)
// needs some GLIBC_2.x version, the same objdump -T finds when it is there.
func TestGlibcNeedOfADynamicProgram(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	v, sym, err := glibcNeed(sh)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || v[0] != 2 || sym == "" {
		t.Fatalf("%s: need %v (%s), want a GLIBC_2.x version", sh, v, sym)
	}
	t.Logf("%s needs GLIBC_%s (%s)", sh, v, sym)
}
