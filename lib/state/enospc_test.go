package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDisk mounts a 256 KiB tmpfs (root only) and returns it, unmounted at
// cleanup; fill fills it to the last byte.
func fullDisk(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v %s", err, out)
		}
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}

func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, size := range []int{4096, 1} { // pages, then any last bytes
		for {
			if _, err := f.Write(buf[:size]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// TestWriteJSONFullDisk: on a full disk WriteJSON fails with ENOSPC, the old
// content is still there, and no temporary file is left.
func TestWriteJSONFullDisk(t *testing.T) {
	mnt := fullDisk(t)
	sp, err := Open(filepath.Join(mnt, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	old := baseline{"powersave", 60}
	if err := sp.WriteJSON("baseline.json", old); err != nil {
		t.Fatal(err)
	}
	if err := sp.AppendLine("drift.jsonl", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	fill(t, mnt)

	err = sp.WriteJSON("baseline.json", baseline{strings.Repeat("x", 10000), 1})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteJSON on a full disk: %v, want ENOSPC", err)
	}
	wantErr(t, err, filepath.Join(sp.Dir(), "baseline.json"), "old content kept")
	t.Log(err)
	var got baseline
	if found, err := sp.ReadJSON("baseline.json", &got); !found || err != nil || got != old {
		t.Fatalf("after ENOSPC: %+v found=%v err=%v", got, found, err)
	}
	assertNoTemp(t, sp.Dir())

	// Appends fail cleanly too, and the file keeps its whole lines.
	if err := sp.AppendLine("drift.jsonl", []byte(strings.Repeat("y", 10000))); err == nil {
		t.Fatal("append on a full disk succeeded")
	}
	if s := readFile(t, filepath.Join(sp.Dir(), "drift.jsonl")); !strings.HasPrefix(s, "{\"a\":1}\n") {
		t.Fatalf("drift file now %.40q", s)
	}
	// Locking still works on a full disk (the holder line is best effort).
	unlock, err := sp.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	unlock()

	// Once space is freed, writing works again.
	os.Remove(filepath.Join(mnt, "filler"))
	if err := sp.WriteJSON("baseline.json", baseline{"performance", 1}); err != nil {
		t.Fatal(err)
	}
}
