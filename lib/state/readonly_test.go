package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A read-only spool creates nothing: an absent directory stays absent and
// reads as empty; every write fails, naming the file, and leaves no file.
func TestOpenReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "spool")
	s, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]int
	if found, err := s.ReadJSON("node.json", &v); found || err != nil {
		t.Errorf("ReadJSON: %v %v", found, err)
	}
	if names, err := s.List(""); len(names) != 0 || err != nil {
		t.Errorf("List: %v %v", names, err)
	}
	if _, err := s.OpenRead("x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenRead: %v", err)
	}
	checkWritesFail(t, s)
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(filepath.Dir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenReadOnly created %s: %v", filepath.Dir(dir), err)
	}

	// An existing spool reads as usual and gets Open's checks.
	rw, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.WriteJSON("node.json", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	s, err = OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if found, err := s.ReadJSON("node.json", &v); !found || err != nil || v["a"] != 1 {
		t.Errorf("ReadJSON: %v %v %v", found, err, v)
	}
	checkWritesFail(t, s)
	if names, _ := s.List(""); len(names) != 1 {
		t.Errorf("files after the writes: %v", names)
	}
	if _, err := os.Lstat(filepath.Join(dir, LockName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file created: %v", err)
	}
	link := filepath.Join(filepath.Dir(dir), "link")
	os.Symlink(dir, link)
	if _, err := OpenReadOnly(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
}

func checkWritesFail(t *testing.T, s *Spool) {
	t.Helper()
	for name, err := range map[string]error{
		"WriteJSON":  s.WriteJSON("job-1.json", 1),
		"AppendLine": s.AppendLine("drift.jsonl", []byte("x")),
		"Remove":     s.Remove("node.json"),
		"Rename":     s.Rename("node.json", "node.json.bad"),
		"Sweep":      func() error { _, err := s.Sweep(); return err }(),
		"Lock":       func() error { _, err := s.Lock(context.Background()); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), s.Dir()) {
			t.Errorf("%s on a read-only spool: %v", name, err)
		}
	}
}
