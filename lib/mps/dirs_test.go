package mps

import (
	"strings"
	"testing"
)

// TestKey: the same GPUs in the same order give the same 12-hex key, and
// any change in the set or its order gives another; indices, repeats and
// odd characters are refused.
func TestKey(t *testing.T) {
	a, err := Key(testUUIDs)
	if err != nil || len(a) != 12 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("Key = %q, %v", a, err)
	}
	if b, _ := Key(append([]string(nil), testUUIDs...)); b != a {
		t.Errorf("Key is not stable: %q, %q", a, b)
	}
	others := [][]string{
		{testUUIDs[1], testUUIDs[0]},
		testUUIDs[:1],
		{"MIG-6f1d9a7e-2b3c-5d4e-8f90-a1b2c3d4e5f6"},
	}
	for _, o := range others {
		if k, err := Key(o); err != nil || k == a {
			t.Errorf("Key(%q) = %q, %v; want a key other than %q", o, k, err, a)
		}
	}
	for _, bad := range [][]string{nil, {"0"}, {""}, {testUUIDs[0], testUUIDs[0]}, {"GPU-1,GPU-2"}, {"GPU-1 "}} {
		if k, err := Key(bad); err == nil {
			t.Errorf("Key(%q) = %q; want an error", bad, k)
		}
	}
}

// TestDirs: <base>/<user>-<key>/{pipe,log}; odd users, keys and bases and
// a pipe path too long for UNIX sockets are refused.
func TestDirs(t *testing.T) {
	p, err := Dirs(DefaultBase, "alice", "0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	want := Paths{
		Dir:  "/run/gpuprep/mps/alice-0123456789ab",
		Pipe: "/run/gpuprep/mps/alice-0123456789ab/pipe",
		Log:  "/run/gpuprep/mps/alice-0123456789ab/log",
	}
	if p != want {
		t.Errorf("Dirs = %+v; want %+v", p, want)
	}
	if _, err := Dirs(DefaultBase, "first.last@example.org", "0123456789ab"); err != nil {
		t.Errorf("a directory user name: %v", err)
	}
	bad := []struct{ base, user, key string }{
		{DefaultBase, "", "0123456789ab"},
		{DefaultBase, "../root", "0123456789ab"},
		{DefaultBase, "a/b", "0123456789ab"},
		{DefaultBase, ".alice", "0123456789ab"},
		{DefaultBase, "-alice", "0123456789ab"},
		{DefaultBase, "al ice", "0123456789ab"},
		{DefaultBase, "al\nice", "0123456789ab"},
		{DefaultBase, "élise", "0123456789ab"},
		{DefaultBase, strings.Repeat("a", 33), "0123456789ab"},
		{DefaultBase, "alice", "0123456789AB"},
		{DefaultBase, "alice", "0123"},
		{DefaultBase, "alice", "../../etc/xx"},
		{"run/gpuprep/mps", "alice", "0123456789ab"},
		{"/run/gpuprep/../mps", "alice", "0123456789ab"},
		{"/" + strings.Repeat("x", 40), strings.Repeat("a", 32), "0123456789ab"},
	}
	for _, b := range bad {
		if p, err := Dirs(b.base, b.user, b.key); err == nil {
			t.Errorf("Dirs(%q, %q, %q) = %+v; want an error", b.base, b.user, b.key, p)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("error of more than one line: %q", err)
		}
	}
}
