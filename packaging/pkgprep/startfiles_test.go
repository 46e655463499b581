package main

import (
	"strings"
	"testing"
)

// The rpm's copyright names the zig-built start files only when its
// programs are the EL8 build.
func TestWithStartFiles(t *testing.T) {
	if got := withStartFiles("C\n", "bin/el8"); !strings.Contains(got, "Files: vendor/el8-start-files/*") || !strings.Contains(got, "unlimited permission to link") {
		t.Errorf("bin/el8: %q", got)
	}
	if got := withStartFiles("C\n", "bin"); got != "C\n" {
		t.Errorf("bin: %q", got)
	}
}
