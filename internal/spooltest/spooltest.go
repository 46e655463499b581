// Package spooltest gives tests a fresh gpuprep spool (lib/state) in their
// temporary directory, closed when the test ends.
package spooltest

import (
	"path/filepath"
	"testing"

	"gpuprep/lib/state"
)

// New opens a new spool under t's temporary directory.
func New(t testing.TB) *state.Spool {
	t.Helper()
	sp, err := state.Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}
