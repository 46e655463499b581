package dirfd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// open opens dir for a test.
func open(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// keep writes a file a link points at, for wantKept.
func keep(t *testing.T) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	return victim
}

// wantKept says the victim file is as keep wrote it and its folder holds
// nothing else.
func wantKept(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's" {
		t.Errorf("%s: %q, %v", victim, b, err)
	}
	if names, _ := os.ReadDir(filepath.Dir(victim)); len(names) != 1 {
		t.Errorf("%s now holds %v", filepath.Dir(victim), names)
	}
}

// A walk never passes a symlink: it names it and makes nothing beyond it.
func TestWalkRefusesSymlink(t *testing.T) {
	top := t.TempDir()
	victim := keep(t)
	os.Mkdir(top+"/a", 0o755)
	os.Symlink(filepath.Dir(victim), top+"/a/b")
	for _, mkdir := range []bool{false, true} {
		_, err := open(t, top).Walk("a/b/c", Walk{Mkdir: mkdir, Mode: 0o755})
		var se *SymlinkError
		if !errors.As(err, &se) || se.Path != top+"/a/b" || err.Error() != "refusing "+top+"/a/b: it is a symlink" {
			t.Errorf("mkdir %v: %v", mkdir, err)
		}
	}
	wantKept(t, victim)
	if _, err := open(t, top).Walk("a/missing", Walk{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := open(t, top).Walk("a/../b", Walk{}); err == nil {
		t.Error(`".." accepted`)
	}
}

// A directory swapped for a symlink while a walk is under way (between
// opening its parent and opening it) is refused: every step opens from
// the descriptor of the one before, never by a path.
func TestWalkSwappedMidWalk(t *testing.T) {
	top := t.TempDir()
	victim := keep(t)
	os.MkdirAll(top+"/a/b", 0o755)
	swap := func(d *Dir, _ *unix.Stat_t, _ bool) error {
		if d.Path() == top+"/a" {
			os.Rename(top+"/a/b", top+"/a/b.old")
			os.Symlink(filepath.Dir(victim), top+"/a/b")
		}
		return nil
	}
	_, err := open(t, top).Walk("a/b/c", Walk{Mkdir: true, Mode: 0o755, Check: swap})
	if !errors.Is(err, ErrSymlink) {
		t.Errorf("walk through a swapped directory: %v", err)
	}
	wantKept(t, victim)
}

// The checks see every directory of the walk; WalkPath starts at /.
func TestWalkChecks(t *testing.T) {
	top := t.TempDir()
	var seen []string
	d, err := WalkPath(top+"/x/y", Walk{Mkdir: true, Mode: 0o700, Check: func(d *Dir, st *unix.Stat_t, last bool) error {
		seen = append(seen, d.Path())
		if last != (d.Path() == top+"/x/y") {
			t.Errorf("%s: last %v", d.Path(), last)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if seen[0] != "/" || seen[len(seen)-1] != top+"/x/y" || len(seen) != strings.Count(top+"/x/y", "/")+1 {
		t.Errorf("checked %v", seen)
	}
	refuse := errors.New("no")
	if _, err := WalkPath(top, Walk{Check: func(*Dir, *unix.Stat_t, bool) error { return refuse }}); err != refuse {
		t.Errorf("a check's error: %v", err)
	}
}

// WriteAtomic gives the file its mode whatever the umask, leaves no
// temporary file, replaces a dead writer's leftover, and either refuses
// (Regular) or replaces (without) a symlink, never writing through it.
func TestWriteAtomic(t *testing.T) {
	top := t.TempDir()
	d := open(t, top)
	old := unix.Umask(0o077)
	err := d.WriteAtomic("f", []byte("one"), Write{Mode: 0o644})
	unix.Umask(old)
	if fi, _ := os.Stat(top + "/f"); err != nil || fi.Mode() != 0o644 {
		t.Fatalf("write: %v, mode %v", err, fi.Mode())
	}
	os.WriteFile(top+"/.f"+TmpMarker+strconv.Itoa(os.Getpid()), []byte("half"), 0o600)
	if err := d.WriteAtomic("f", []byte("two"), Write{Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(top); len(names) != 1 {
		t.Errorf("entries %v", names)
	}
	victim := keep(t)
	os.Symlink(victim, top+"/link")
	if err := d.WriteAtomic("link", []byte("x"), Write{Mode: 0o644, Regular: true}); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), top+"/link") {
		t.Errorf("Regular over a symlink: %v", err)
	}
	unix.Mkfifo(top+"/fifo", 0o644)
	if err := d.WriteAtomic("fifo", []byte("x"), Write{Mode: 0o644, Regular: true}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Regular over a FIFO: %v", err)
	}
	if err := d.WriteAtomic("link", []byte("x"), Write{Mode: 0o644}); err != nil {
		t.Errorf("over a symlink: %v", err)
	}
	if fi, err := os.Lstat(top + "/link"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link is not replaced: %v", err)
	}
	wantKept(t, victim)
	if err := d.WriteAtomic("a/b", nil, Write{}); err == nil {
		t.Error("a name with a slash accepted")
	}
}

// ReadFile never follows a symlink, never blocks on a FIFO, bounds the
// size and asks the check.
func TestReadFile(t *testing.T) {
	top := t.TempDir()
	d := open(t, top)
	os.WriteFile(top+"/f", []byte("12345"), 0o644)
	if b, err := d.ReadFile("f", Read{Max: 5}); err != nil || string(b) != "12345" {
		t.Errorf("read: %q, %v", b, err)
	}
	if _, err := d.ReadFile("f", Read{Max: 4}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	bad := errors.New("untrusted")
	if _, err := d.ReadFile("f", Read{Max: 5, Check: func(*unix.Stat_t) error { return bad }}); err != bad {
		t.Errorf("check: %v", err)
	}
	os.Symlink(top+"/f", top+"/link")
	if _, err := d.ReadFile("link", Read{Max: 5}); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v", err)
	}
	if _, err := d.ReadFile("none", Read{Max: 5}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	unix.Mkfifo(top+"/fifo", 0o644)
	done := make(chan error, 1)
	go func() { _, err := d.ReadFile("fifo", Read{Max: 5}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile hangs on a FIFO")
	}
}

// MkdirAt makes, checks and sets the mode (and owner) of a directory.
func TestMkdirAt(t *testing.T) {
	top := t.TempDir()
	d := open(t, top)
	os.Mkdir(top+"/x", 0o777)
	os.Chmod(top+"/x", 0o777)
	sub, err := d.MkdirAt("x", Mkdir{Mode: 0o700, Own: true})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if fi, _ := os.Stat(top + "/x"); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode())
	}
	refuse := errors.New("no")
	if _, err := d.MkdirAt("y", Mkdir{Mode: 0o700, Check: func(*Dir, *unix.Stat_t) error { return refuse }}); err != refuse {
		t.Errorf("check: %v", err)
	}
	os.Symlink(t.TempDir(), top+"/z")
	if _, err := d.MkdirAt("z", Mkdir{Mode: 0o700}); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v", err)
	}
}

// A format version: none is 0, a newer one is refused in one line.
func TestVersion(t *testing.T) {
	top := t.TempDir()
	d := open(t, top)
	if v, err := d.ReadVersion("format", Read{}); v != 0 || err != nil {
		t.Errorf("missing: %d, %v", v, err)
	}
	if err := d.WriteVersion("format", 3, Write{Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	v, err := d.ReadVersion("format", Read{})
	if v != 3 || err != nil {
		t.Fatalf("read back: %d, %v", v, err)
	}
	err = CheckVersion(top, v, 2)
	if !errors.Is(err, ErrNewer) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), top+": format 3, ") {
		t.Errorf("newer: %v", err)
	}
	if CheckVersion(top, 1, 2) != nil || CheckVersion(top, 2, 2) != nil {
		t.Error("an older or equal version refused")
	}
	os.WriteFile(top+"/format", []byte("two\n"), 0o644)
	if _, err := d.ReadVersion("format", Read{}); err == nil {
		t.Error("garbage accepted")
	}
}

func TestTmpPID(t *testing.T) {
	for name, want := range map[string]int{".node.json.tmp-42": 42, ".x.tmp-0": 0, "node.json": 0, ".x.tmp-4x": 0, "x.tmp-7": 0} {
		if pid, ok := TmpPID(name); pid != want && ok || ok != (want > 0) {
			t.Errorf("%s: %d %v", name, pid, ok)
		}
	}
}
