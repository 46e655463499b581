package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ExistsErr tells "does not exist" from any other error, which Exists
// reads as "no" too: a path under a file (ENOTDIR) or too long a name
// says nothing about whether the thing exists.
func TestExistsErr(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := NewRoot(dir)
	long := "/" + strings.Repeat("x", 300)
	for p, want := range map[string]struct {
		exists bool
		errno  error
	}{
		"/file":         {true, nil},
		"/missing":      {false, nil},
		"/missing/more": {false, nil},
		"/file/job_1":   {false, syscall.ENOTDIR},
		long:            {false, syscall.ENAMETOOLONG},
	} {
		ok, err := r.ExistsErr(p)
		if ok != want.exists || (want.errno == nil) != (err == nil) || want.errno != nil && !errors.Is(err, want.errno) {
			t.Errorf("ExistsErr(%.20q) = %v, %v; want %v, %v", p, ok, err, want.exists, want.errno)
		}
		if r.Exists(p) != want.exists {
			t.Errorf("Exists(%.20q) = %v", p, !want.exists)
		}
	}
}
