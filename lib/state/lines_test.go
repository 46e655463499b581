package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestAppendLines(t *testing.T) {
	sp := newSpool(t)
	if err := sp.AppendLine("drift.jsonl", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := sp.AppendLines("drift.jsonl", [][]byte{[]byte(`{"a":2}`), []byte(`{"a":3}`)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sp.Dir(), "drift.jsonl")
	if got := readFile(t, path); got != "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n" {
		t.Fatalf("got %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	err := sp.AppendLines("drift.jsonl", [][]byte{[]byte("ok"), []byte("two\nlines")})
	wantErr(t, err, path, "newline")
	if got := readFile(t, path); strings.Contains(got, "ok") {
		t.Fatal("a refused batch was partly written")
	}
}

// TestAppendAfterTornLine: a fragment left by a cut-short write stays on its
// own line; the next record is whole.
func TestAppendAfterTornLine(t *testing.T) {
	sp := newSpool(t)
	path := filepath.Join(sp.Dir(), "drift.jsonl")
	os.WriteFile(path, []byte("{\"a\":1}\n{\"a\":"), 0o600)
	if err := sp.AppendLine("drift.jsonl", []byte(`{"a":3}`)); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "{\"a\":1}\n{\"a\":\n{\"a\":3}\n" {
		t.Fatalf("got %q", got)
	}
}

func TestAppendRefusesSymlink(t *testing.T) {
	sp := newSpool(t)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	os.Symlink(victim, filepath.Join(sp.Dir(), "drift.jsonl"))
	wantErr(t, sp.AppendLine("drift.jsonl", []byte("x")), "drift.jsonl", "symlink")
	if got := readFile(t, victim); got != "keep\n" {
		t.Fatalf("victim changed: %q", got)
	}
	_, err := sp.OpenRead("drift.jsonl")
	wantErr(t, err, "drift.jsonl", "symlink")
}

// TestConcurrentAppends: lines from many writers never interleave.
func TestConcurrentAppends(t *testing.T) {
	sp := newSpool(t)
	var wg sync.WaitGroup
	long := strings.Repeat("x", 5000)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if err := sp.AppendLine("drift.jsonl", []byte(fmt.Sprintf("%d %d %s", w, i, long))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(sp.Dir(), "drift.jsonl")), "\n"), "\n")
	if len(lines) != 16*40 {
		t.Fatalf("%d lines, want %d", len(lines), 16*40)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 3 || f[2] != long {
			t.Fatalf("interleaved line: %.80q", l)
		}
	}
}

func TestOpenReadRemoveList(t *testing.T) {
	sp := newSpool(t)
	if _, err := sp.OpenRead("drift.jsonl"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	sp.AppendLine("drift.jsonl", []byte("x"))
	f, err := sp.OpenRead("drift.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(f)
	f.Close()
	if b.String() != "x\n" {
		t.Fatalf("read %q", b.String())
	}
	for _, n := range []string{"job-12.json", "job-3.json", "node.json"} {
		sp.WriteJSON(n, 1)
	}
	os.WriteFile(filepath.Join(sp.Dir(), ".job-9.json.tmp-1"), nil, 0o600)
	unlock, _ := sp.Lock(t.Context())
	unlock()
	got, err := sp.List("job-")
	if err != nil || !reflect.DeepEqual(got, []string{"job-12.json", "job-3.json"}) {
		t.Fatalf("List(job-) = %v %v", got, err)
	}
	all, _ := sp.List("")
	if !reflect.DeepEqual(all, []string{"drift.jsonl", "job-12.json", "job-3.json", "node.json"}) {
		t.Fatalf("List() = %v", all)
	}
	if err := sp.Remove("job-3.json"); err != nil {
		t.Fatal(err)
	}
	if err := sp.Remove("job-3.json"); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	if got, _ := sp.List("job-"); !reflect.DeepEqual(got, []string{"job-12.json"}) {
		t.Fatalf("after Remove: %v", got)
	}
}

func TestSweep(t *testing.T) {
	sp := newSpool(t)
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := cmd.Process.Pid
	deadTmp := ".node.json.tmp-" + strconv.Itoa(dead)
	liveTmp := ".node.json.tmp-1" // pid 1 is alive
	for _, n := range []string{deadTmp, liveTmp} {
		os.WriteFile(filepath.Join(sp.Dir(), n), nil, 0o600)
	}
	removed, err := sp.Sweep()
	if err != nil || !reflect.DeepEqual(removed, []string{deadTmp}) {
		t.Fatalf("Sweep = %v %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(sp.Dir(), liveTmp)); err != nil {
		t.Fatal("a live process's temporary file was removed")
	}
}
