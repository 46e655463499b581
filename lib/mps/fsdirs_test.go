package mps

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// owner returns the uid, gid and mode (permissions, sticky bit) of path,
// not following a symlink.
func owner(t *testing.T, path string) (int, int, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), fi.Mode() & (os.ModePerm | os.ModeSticky | os.ModeSymlink)
}

func wantOwner(t *testing.T, path string, uid int, mode os.FileMode) {
	t.Helper()
	if u, _, m := owner(t, path); u != uid || m != mode {
		t.Errorf("%s: uid %d mode %v; want uid %d mode %v", path, u, m, uid, mode)
	}
}

func dirsFor(t *testing.T, base, user string) Paths {
	t.Helper()
	p, err := Dirs(base, user, "0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCreateGrantRemove: Create makes the base, the daemon's directory
// (0755) and pipe and log (0700) as this process's, Grant hands the pipe
// directory to the user (01700), a second Create takes it back and empties
// both, links included (their targets untouched), and Remove deletes it
// all, twice without complaint.
func TestCreateGrantRemove(t *testing.T) {
	base := filepath.Join(shortBase(t), "mps")
	p := dirsFor(t, base, "alice")
	uid, gid := jobUser()
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	wantOwner(t, base, me, 0o755)
	wantOwner(t, p.Dir, me, 0o755)
	wantOwner(t, p.Pipe, me, 0o700)
	wantOwner(t, p.Log, me, 0o700)
	if err := Grant(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	wantOwner(t, p.Pipe, uid, 0o700|os.ModeSticky)
	if _, g, _ := owner(t, p.Pipe); g != gid {
		t.Errorf("pipe group %d; want %d", g, gid)
	}

	outside := t.TempDir()
	os.WriteFile(outside+"/keep", []byte("x"), 0o644)
	os.WriteFile(p.Pipe+"/control_lock", nil, 0o666)
	os.Mkdir(p.Pipe+"/sub", 0o755)
	os.Symlink(outside, p.Pipe+"/sub/link")
	os.Symlink(outside+"/keep", p.Log+"/control.log")
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	wantOwner(t, p.Pipe, me, 0o700)
	for _, d := range []string{p.Pipe, p.Log} {
		if names, _ := os.ReadDir(d); len(names) != 0 {
			t.Errorf("%s not emptied: %v", d, names)
		}
	}
	if b, err := os.ReadFile(outside + "/keep"); err != nil || string(b) != "x" {
		t.Errorf("a link's target was touched: %q, %v", b, err)
	}

	os.Symlink(outside, p.Log+"/into")
	for range 2 {
		if err := Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Remove: %v", p.Dir, err)
	}
	if _, err := os.Stat(outside + "/keep"); err != nil {
		t.Errorf("Remove followed a link: %v", err)
	}
	if err := Remove(dirsFor(t, "/nonexistent/gpuprep/mps", "alice")); err != nil {
		t.Errorf("Remove under a missing base: %v", err)
	}
}

// TestCreateRefusesSymlinks: a symlink planted as the daemon's directory,
// as pipe or log, or above the base, is refused and its target untouched;
// Remove unlinks a planted daemon directory link without entering it.
func TestCreateRefusesSymlinks(t *testing.T) {
	root := shortBase(t)
	base := filepath.Join(root, "mps")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	uid, _ := jobUser()

	p := dirsFor(t, base, "bob")
	os.Symlink(target, p.Dir)
	if err := Create(p, uid); !errors.Is(err, ErrSymlink) {
		t.Errorf("daemon directory a symlink: %v", err)
	}
	if err := Remove(p); err != nil {
		t.Errorf("Remove of a planted link: %v", err)
	}
	if _, err := os.Lstat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("planted link left: %v", err)
	}

	for _, which := range []string{"pipe", "log"} {
		p := dirsFor(t, base, "carol-"+which)
		os.Mkdir(p.Dir, 0o755)
		os.Symlink(target, filepath.Join(p.Dir, which))
		if err := Create(p, uid); !errors.Is(err, ErrSymlink) {
			t.Errorf("%s a symlink: %v", which, err)
		}
	}
	if err := Grant(dirsFor(t, base, "carol-pipe"), uid, 0); !errors.Is(err, ErrSymlink) {
		t.Errorf("Grant through a symlink: %v", err)
	}

	os.Symlink(base, root+"/link")
	if err := Create(dirsFor(t, root+"/link", "dave"), uid); !errors.Is(err, ErrSymlink) {
		t.Errorf("base a symlink: %v", err)
	}
	if err := Remove(dirsFor(t, root+"/link", "dave")); !errors.Is(err, ErrSymlink) {
		t.Errorf("Remove through a symlinked base: %v", err)
	}
	if names, _ := os.ReadDir(target); len(names) != 0 {
		t.Errorf("the link target got %v", names)
	}
}

// TestCreateRefusesOthers: a base others can write, and (as root) a pipe
// directory that belongs to neither root nor the job's user, are refused.
func TestCreateRefusesOthers(t *testing.T) {
	base := filepath.Join(shortBase(t), "mps")
	os.Mkdir(base, 0o777)
	os.Chmod(base, 0o777)
	uid, _ := jobUser()
	if err := Create(dirsFor(t, base, "erin"), uid); err == nil {
		t.Error("a base writable by others was accepted")
	}
	os.Chmod(base, 0o755)
	if os.Geteuid() != 0 {
		t.Log("not root: a directory of a third user cannot be made, not checked")
		return
	}
	p := dirsFor(t, base, "erin")
	os.MkdirAll(p.Pipe, 0o700)
	os.Chown(p.Pipe, uid+1, uid+1)
	if err := Create(p, uid); err == nil {
		t.Error("a pipe directory of a third user was accepted")
	}
	if u, _, _ := owner(t, p.Pipe); u != uid+1 {
		t.Errorf("the refused directory changed hands: uid %d", u)
	}
}
