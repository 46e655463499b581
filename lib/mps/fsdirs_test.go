package mps

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
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
// (0755) and pipe and log (0700) as this process's; Grant leaves the pipe
// directory root's and adds the ACL entry user:<uid>:--x (mode 0710: the
// group bits are the ACL's mask); a second Create moves everything aside
// and starts afresh, links included (their targets untouched); Remove
// deletes it all, twice without complaint, and leaves the trash empty.
func TestCreateGrantRemove(t *testing.T) {
	base := filepath.Join(shortBase(t), "mps")
	p := dirsFor(t, base, "alice")
	uid, _ := jobUser()
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	wantOwner(t, base, me, 0o755)
	wantOwner(t, p.Dir, me, 0o755)
	wantOwner(t, p.Pipe, me, 0o700)
	wantOwner(t, p.Log, me, 0o700)
	if err := Grant(p, uid); err != nil {
		t.Fatal(err)
	}
	wantOwner(t, p.Pipe, me, 0o710)
	wantOwner(t, p.Log, me, 0o700)
	acl := make([]byte, 256)
	n, err := unix.Getxattr(p.Pipe, aclXattr, acl)
	if err != nil || !bytes.Equal(acl[:n], searchOnlyACL(uid)) {
		t.Errorf("pipe directory ACL %x, %v; want %x", acl[:max(n, 0)], err, searchOnlyACL(uid))
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
			t.Errorf("%s not new: %v", d, names)
		}
	}
	if n, err := unix.Getxattr(p.Pipe, aclXattr, acl); err == nil {
		t.Errorf("the new pipe directory has an ACL already: %x", acl[:n])
	}
	if b, err := os.ReadFile(outside + "/keep"); err != nil || string(b) != "x" {
		t.Errorf("a link's target was touched: %q, %v", b, err)
	}

	os.Symlink(outside, p.Log+"/into")
	for range 2 {
		if pg, err := Remove(p); err != nil || pg.Left {
			t.Fatalf("Remove: %+v, %v", pg, err)
		}
	}
	if _, err := os.Lstat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Remove: %v", p.Dir, err)
	}
	wantNoTrash(t, base)
	if _, err := os.Stat(outside + "/keep"); err != nil {
		t.Errorf("Remove followed a link: %v", err)
	}
	if _, err := Remove(dirsFor(t, "/nonexistent/gpuprep/mps", "alice")); err != nil {
		t.Errorf("Remove under a missing base: %v", err)
	}
}

// wantEmpty says dir exists and holds nothing.
func wantEmpty(t *testing.T, dir string) {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 0 {
		t.Errorf("%s: %d entries, %v; want an empty directory", dir, len(names), err)
	}
}

// wantNoTrash says the base holds no trash: Remove emptied and removed it.
func wantNoTrash(t *testing.T, base string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(base, TrashName)); !errors.Is(err, os.ErrNotExist) {
		names, _ := os.ReadDir(filepath.Join(base, TrashName))
		t.Errorf("%s/%s left (%d entries): %v", base, TrashName, len(names), err)
	}
}

// TestGrantSearchOnly, as root: through the pipe directory Grant made,
// the job's user (uid 4242) reaches the daemon's files by name and does
// nothing else (no listing, no new file or directory, no rename, no
// removal, no chmod); another user (4244) does not even reach them.
func TestGrantSearchOnly(t *testing.T) {
	testroot.NeedRoot(t, "the job's user is another uid")
	top := shortBase(t)
	os.Chmod(top, 0o755)
	p := dirsFor(t, filepath.Join(top, "mps"), "alice")
	if err := Create(p, 4242); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p.Pipe+"/nvidia-cuda-mps-control.pid", []byte("1\n"), 0o644)
	if err := unix.Mknod(p.Pipe+"/control", unix.S_IFSOCK|0o666, 0); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.Pipe+"/control", 0o666) // as the daemon leaves it, whatever the umask
	if err := Grant(p, 4242); err != nil {
		t.Fatal(err)
	}
	pipe := p.Pipe
	for _, c := range []struct {
		uid    int
		script string
		ok     bool
	}{
		{4242, "test -S " + pipe + "/control && test -w " + pipe + "/control", true},
		{4242, "cat " + pipe + "/nvidia-cuda-mps-control.pid", true},
		{4242, "ls " + pipe, false},
		{4242, "mkdir " + pipe + "/d", false},
		{4242, "touch " + pipe + "/f", false},
		{4242, "rm -f " + pipe + "/nvidia-cuda-mps-control.pid", false},
		{4242, "mv " + pipe + "/control " + pipe + "/c2", false},
		{4242, "ln -s /etc/passwd " + pipe + "/l", false},
		{4242, "chmod 0777 " + pipe, false},
		{4242, "ls " + p.Log, false},
		{4244, "test -e " + pipe + "/control", false},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.uid)}}
		out, err := cmd.CombinedOutput()
		if (err == nil) != c.ok {
			t.Errorf("uid %d: %q: exit %v, want success %v (%s)", c.uid, c.script, err, c.ok, out)
		}
	}
	if _, err := os.Lstat(pipe + "/control"); err != nil {
		t.Errorf("control socket: %v", err)
	}
}

// TestCreateReplacesWhatItFinds: a symlink planted as the daemon's
// directory, or as its pipe or log directory, is moved aside and
// unlinked, never entered, and Create makes real directories; a symlink
// above the base is refused by Create and Remove alike (ErrSymlink). No
// link's target is touched.
func TestCreateReplacesWhatItFinds(t *testing.T) {
	root := shortBase(t)
	base := filepath.Join(root, "mps")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	uid, _ := jobUser()
	me := os.Geteuid()

	p := dirsFor(t, base, "bob")
	os.Symlink(target, p.Dir)
	if err := Create(p, uid); err != nil {
		t.Errorf("daemon directory a symlink: %v", err)
	}
	wantOwner(t, p.Dir, me, 0o755)
	for _, which := range []string{"pipe", "log"} {
		p := dirsFor(t, base, "carol-"+which)
		os.Mkdir(p.Dir, 0o755)
		os.Symlink(target, filepath.Join(p.Dir, which))
		if err := Create(p, uid); err != nil {
			t.Errorf("%s a symlink: %v", which, err)
		}
		wantOwner(t, filepath.Join(p.Dir, which), me, 0o700)
	}
	os.Symlink(target, filepath.Join(base, "carol-pipe-0123456789ab/pipe/x"))
	if err := Grant(dirsFor(t, base, "carol-pipe"), uid); err != nil {
		t.Errorf("Grant: %v", err)
	}

	os.Symlink(base, root+"/link")
	if err := Create(dirsFor(t, root+"/link", "dave"), uid); !errors.Is(err, ErrSymlink) {
		t.Errorf("base a symlink: %v", err)
	}
	if _, err := Remove(dirsFor(t, root+"/link", "dave")); !errors.Is(err, ErrSymlink) {
		t.Errorf("Remove through a symlinked base: %v", err)
	}
	if names, _ := os.ReadDir(target); len(names) != 0 {
		t.Errorf("the link target got %v", names)
	}
}

// TestCreateRefusesOthers: a base others can write is refused; a pipe
// directory of a third user (as root) is moved aside, never reused.
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
	os.WriteFile(p.Pipe+"/planted", nil, 0o644)
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	wantOwner(t, p.Pipe, os.Geteuid(), 0o700)
	wantEmpty(t, p.Pipe)
}

// removeChildEnv makes the test binary, run again, Remove the daemon
// directory the variable names with at most 16 descriptors open
// (removeChild).
const removeChildEnv = "GPUPREP_TEST_REMOVE_DIR"

// removeChild is the test binary's work when removeChildEnv is set: lower
// RLIMIT_NOFILE to 16, Remove the directory, print the outcome.
func removeChild(dir string) int {
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 16, Max: 16}); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	p, err := Dirs(filepath.Dir(dir), "deep", filepath.Base(dir)[len("deep-"):])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	pg, err := Remove(p)
	fmt.Printf("entries %d left %v err %v purge %v\n", pg.Entries, pg.Left, err, pg.Err)
	if err != nil || pg.Left {
		return 1
	}
	return 0
}

// TestRemoveDeepTree: what a user could plant where an older release gave
// them the pipe directory (a tree 3,000 directories deep, a directory of
// 3,000 files, links to root's files and directories) is removed whole by
// a Remove that may hold 16 descriptors (Go's os.RemoveAll holds one per
// level, and the old removal refused past 8 levels), and nothing a link
// points at is touched.
func TestRemoveDeepTree(t *testing.T) {
	base := filepath.Join(shortBase(t), "mps")
	p := dirsFor(t, base, "deep")
	uid, _ := jobUser()
	if err := Create(p, uid); err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	os.WriteFile(victim+"/keep", []byte("x"), 0o644)
	fd, err := unix.Open(p.Pipe, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	unix.Symlinkat(victim, fd, "dirlink")
	unix.Symlinkat(victim+"/keep", fd, "link")
	unix.Close(fd)
	os.Mkdir(p.Pipe+"/wide", 0o755)
	for i := range 3000 {
		os.WriteFile(p.Pipe+"/wide/f"+strconv.Itoa(i), nil, 0o644)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), removeChildEnv+"="+p.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Remove with 16 descriptors: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	if _, err := os.Lstat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Remove: %v", p.Dir, err)
	}
	wantNoTrash(t, base)
	if b, err := os.ReadFile(victim + "/keep"); err != nil || string(b) != "x" {
		t.Errorf("a link's target: %q, %v", b, err)
	}
}

// TestPurgeBudget: a purge that runs out of its budget leaves the rest in
// the trash, says so, and the next Remove finishes it.
func TestPurgeBudget(t *testing.T) {
	base := filepath.Join(shortBase(t), "mps")
	p := dirsFor(t, base, "wide")
	if err := Create(p, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		os.MkdirAll(fmt.Sprintf("%s/d%d/e", p.Pipe, i), 0o755)
	}
	b, err := OpenBase(base, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	trash, err := b.OpenTrash(TrashName)
	if err != nil {
		t.Fatal(err)
	}
	defer trash.Close()
	if err := trash.Take(b, filepath.Base(p.Dir)); err != nil {
		t.Fatal(err)
	}
	if pg := trash.Empty(10); !pg.Left || pg.Err == nil || pg.Entries < 10 {
		t.Errorf("purge with a budget of 10: %+v; want some left, and why", pg)
	}
	if pg, err := Remove(p); err != nil || pg.Left {
		t.Errorf("the next Remove: %+v, %v", pg, err)
	}
	wantNoTrash(t, base)
}
