package evfile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// ReadFiles reads the records of directories and files named, newest
// first, and names each bad file: a symlink (not followed), a FIFO
// (without hanging), garbage, a newer format.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	node1, node2 := dir+"/node1", dir+"/node2"
	os.Mkdir(node1, 0o755)
	os.Mkdir(node2, 0o755)
	for path, id := range map[string]string{node1 + "/1-a.json": "1", node2 + "/1-b.json": "1", dir + "/two.json": "2"} {
		b, _ := json.Marshal(record(id, 1000, t0.Add(map[string]time.Duration{"1": 0, "2": time.Minute}[id])))
		os.WriteFile(path, b, 0o600)
	}
	v := victim(t)
	os.WriteFile(node1+"/bad.json", []byte("{"), 0o600)
	os.WriteFile(node1+"/new.json", []byte(`{"format": 9}`), 0o600)
	os.WriteFile(node1+"/.hidden.json", []byte("{"), 0o600)
	os.WriteFile(node1+"/notes.txt", []byte("{"), 0o600)
	os.Symlink(v, node2+"/link.json")
	unix.Mkfifo(node2+"/fifo.json", 0o600)
	os.Symlink(dir+"/two.json", dir+"/link.json")
	recs, errs := ReadFiles(node1, node2+"/", dir+"/two.json", dir+"/link.json", dir+"/missing")
	if len(recs) != 3 || recs[0].Job.ID != "2" {
		t.Errorf("%d records: %+v", len(recs), recs)
	}
	joined := errors.Join(errs...)
	if len(errs) != 6 || !errors.Is(joined, ErrNewer) || !errors.Is(joined, dirfd.ErrSymlink) || !errors.Is(joined, dirfd.ErrNotRegular) {
		t.Errorf("errors: %v", joined)
	}
	for _, want := range []string{node1 + "/bad.json: not an evidence record", "refusing " + dir + "/link.json: it is a symlink", dir + "/missing"} {
		if !strings.Contains(joined.Error(), want) {
			t.Errorf("no %q in %v", want, joined)
		}
	}
	wantVictim(t, v)
	if recs, errs := ReadFiles(filepath.Join(node2, ".")); len(recs) != 1 || len(errs) != 2 {
		t.Errorf("node2/.: %v, %v", recs, errs)
	}
}
