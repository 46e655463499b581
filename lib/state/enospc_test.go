package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/fulldisk"
)

// TestWriteJSONFullDisk: on a full disk WriteJSON fails with ENOSPC, the old
// content is still there, and no temporary file is left.
func TestWriteJSONFullDisk(t *testing.T) {
	mnt := fulldisk.Mount(t)
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
	fulldisk.Fill(t, mnt)

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
