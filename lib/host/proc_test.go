package host

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestPIDsAndRealUID(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"42", "7", "042", "self", "0", "-3", "1000"} {
		os.MkdirAll(filepath.Join(dir, "proc", n), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "proc/42/status"), []byte("Name:\tx\nUid:\t113\t0\t0\t0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "proc/7/status"), []byte("Name:\tx\n"), 0o644)
	r := NewRoot(dir)
	pids, err := r.PIDs()
	if err != nil || !reflect.DeepEqual(pids, []int{7, 42, 1000}) {
		t.Fatalf("PIDs: %v %v", pids, err)
	}
	if uid, err := r.RealUID(42); err != nil || uid != 113 {
		t.Errorf("RealUID(42): %d %v", uid, err)
	}
	if _, err := r.RealUID(7); err == nil {
		t.Error("RealUID of a status without Uid: gave no error")
	}
	if _, err := r.RealUID(1000); !ProcGone(err) {
		t.Errorf("RealUID of a process without status: %v, want gone", err)
	}
}
