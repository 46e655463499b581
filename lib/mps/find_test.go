package mps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/host"
)

// TestFind: the first of /usr/bin, /usr/local/bin and /usr/local/cuda/bin
// with an executable regular file (or a link to one) wins; a directory or
// a file without x is passed over; none is one line wrapping ErrNoMPS.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	r := host.NewRoot(dir)
	_, err := Find(r)
	if !errors.Is(err, ErrNoMPS) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "/usr/local/cuda/bin") {
		t.Errorf("Find in an empty root: %v", err)
	}
	put := func(node string, mode os.FileMode) string {
		p := r.Path(node)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cuda := put("/usr/local/cuda/bin/"+ControlName, 0o755)
	put("/usr/bin/"+ControlName, 0o644)
	os.MkdirAll(r.Path("/usr/local/bin/"+ControlName), 0o755)
	if got, err := Find(r); got != cuda || err != nil {
		t.Errorf("Find = %q, %v; want %q", got, err, cuda)
	}
	os.Remove(r.Path("/usr/bin/" + ControlName))
	os.Symlink("../local/cuda/bin/"+ControlName, r.Path("/usr/bin/"+ControlName))
	if got, err := Find(r); got != r.Path("/usr/bin/"+ControlName) || err != nil {
		t.Errorf("Find with a link in /usr/bin = %q, %v", got, err)
	}
}
