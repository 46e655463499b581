package state

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type baseline struct {
	Governor  string `json:"governor"`
	Swappines int    `json:"swappiness"`
}

func TestJSONRoundTrip(t *testing.T) {
	sp := newSpool(t)
	var got baseline
	found, err := sp.ReadJSON("baseline.json", &got)
	if found || err != nil {
		t.Fatalf("missing file: found=%v err=%v", found, err)
	}
	want := baseline{"performance", 10}
	if err := sp.WriteJSON("baseline.json", want); err != nil {
		t.Fatal(err)
	}
	if err := sp.WriteJSON("baseline.json", baseline{"powersave", 60}); err != nil {
		t.Fatal(err)
	}
	found, err = sp.ReadJSON("baseline.json", &got)
	if !found || err != nil || got != (baseline{"powersave", 60}) {
		t.Fatalf("got %+v found=%v err=%v", got, found, err)
	}
	fi, _ := os.Stat(filepath.Join(sp.Dir(), "baseline.json"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	assertNoTemp(t, sp.Dir())
}

func TestReadJSONGarbageNamesFile(t *testing.T) {
	sp := newSpool(t)
	path := filepath.Join(sp.Dir(), "journal.json")
	for _, content := range []string{`{"governor": "perf`, "", "null x", "\x00\x01"} {
		os.WriteFile(path, []byte(content), 0o600)
		var v baseline
		found, err := sp.ReadJSON("journal.json", &v)
		if !found {
			t.Errorf("%q: found = false", content)
		}
		wantErr(t, err, path)
	}
}

// TestSymlinkInsideSpool: a symlink planted as baseline.json is never
// followed: ReadJSON refuses it, and WriteJSON replaces the link itself,
// leaving its target untouched.
func TestSymlinkInsideSpool(t *testing.T) {
	sp := newSpool(t)
	victim := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(victim, []byte(`{"governor":"victim"}`), 0o644)
	link := filepath.Join(sp.Dir(), "baseline.json")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	var v baseline
	_, err := sp.ReadJSON("baseline.json", &v)
	wantErr(t, err, link, "symlink")
	if v.Governor == "victim" {
		t.Fatal("ReadJSON followed the link")
	}
	if err := sp.WriteJSON("baseline.json", baseline{"performance", 1}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, victim); got != `{"governor":"victim"}` {
		t.Fatalf("link target changed: %q", got)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("baseline.json is not a regular file after WriteJSON: %v %v", fi.Mode(), err)
	}
	if found, err := sp.ReadJSON("baseline.json", &v); !found || err != nil || v.Governor != "performance" {
		t.Fatalf("read back %+v %v %v", v, found, err)
	}
	// A planted temporary-file link is not followed either.
	os.Symlink(victim, filepath.Join(sp.Dir(), tmpName("node.json")))
	if err := sp.WriteJSON("node.json", 1); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, victim); got != `{"governor":"victim"}` {
		t.Fatalf("link target changed through the temp name: %q", got)
	}
}

func TestReadJSONFIFODoesNotHang(t *testing.T) {
	sp := newSpool(t)
	if err := syscall.Mkfifo(filepath.Join(sp.Dir(), "node.json"), 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		var v any
		_, err := sp.ReadJSON("node.json", &v)
		done <- err
	}()
	select {
	case err := <-done:
		wantErr(t, err, "node.json", "not a regular file")
	case <-time.After(5 * time.Second):
		t.Fatal("ReadJSON blocked on a FIFO")
	}
}

// TestWriteJSONFailureKeepsOld: a rename that fails (the name is a directory)
// leaves the old content and no temporary file.
func TestWriteJSONFailureKeepsOld(t *testing.T) {
	sp := newSpool(t)
	os.Mkdir(filepath.Join(sp.Dir(), "node.json"), 0o700)
	err := sp.WriteJSON("node.json", 1)
	wantErr(t, err, filepath.Join(sp.Dir(), "node.json"), "old content kept")
	assertNoTemp(t, sp.Dir())

	if err := sp.WriteJSON("plan.json", func() {}); err == nil {
		t.Fatal("unencodable value accepted")
	}
	assertNoTemp(t, sp.Dir())
}

// TestWriteJSONStaleTemp: a temporary file left by a dead process that had
// our pid does not block the write.
func TestWriteJSONStaleTemp(t *testing.T) {
	sp := newSpool(t)
	os.WriteFile(filepath.Join(sp.Dir(), tmpName("node.json")), []byte("half"), 0o600)
	if err := sp.WriteJSON("node.json", 7); err != nil {
		t.Fatal(err)
	}
	var v int
	if _, err := sp.ReadJSON("node.json", &v); err != nil || v != 7 {
		t.Fatalf("got %d %v", v, err)
	}
	assertNoTemp(t, sp.Dir())
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}
