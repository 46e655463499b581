package state

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/lib/dirfd"
)

// newSpool opens a fresh spool under the test's temporary directory.
func newSpool(t *testing.T) *Spool {
	t.Helper()
	sp, err := Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// wantErr fails unless err is non-nil and its message has every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q is more than one line", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tmpName is the first temporary file a write of name by this process
// tries (dirfd.Dir.WriteAtomic).
func tmpName(name string) string {
	return "." + name + dirfd.TmpMarker + strconv.Itoa(os.Getpid())
}
