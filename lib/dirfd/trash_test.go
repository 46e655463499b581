package dirfd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// removeChildEnv makes the test binary, run again, RemoveAll the
// directory the variable names with at most 16 descriptors open.
const removeChildEnv = "GPUPREP_TEST_DIRFD_REMOVE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(removeChildEnv); dir != "" {
		os.Exit(removeChild(dir))
	}
	os.Exit(m.Run())
}

// removeChild lowers RLIMIT_NOFILE to 16 and removes dir.
func removeChild(dir string) int {
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 16, Max: 16}); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	d, err := Open(filepath.Dir(dir))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	pg, err := d.RemoveAll(filepath.Base(dir))
	fmt.Printf("entries %d left %v err %v purge %v\n", pg.Entries, pg.Left, err, pg.Err)
	if err != nil || pg.Left {
		return 1
	}
	return 0
}

// plant makes, in dir, a tree depth directories deep, owned by uid 65534
// (a user's, as one planted where gpuprep once gave them a directory),
// with links to victim and its folder at the bottom, and a folder of
// 2,000 files.
func plant(t *testing.T, dir string, depth int, victim string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o700); err != nil {
			t.Fatal(err)
		}
		unix.Fchownat(fd, "d", 65534, 65534, unix.AT_SYMLINK_NOFOLLOW)
		nfd, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	unix.Symlinkat(victim, fd, "link")
	unix.Symlinkat(filepath.Dir(victim), fd, "dirlink")
	unix.Close(fd)
	os.Mkdir(dir+"/wide", 0o755)
	for i := range 2000 {
		os.WriteFile(dir+"/wide/f"+strconv.Itoa(i), nil, 0o644)
	}
}

// RemoveAll deletes a user's tree 3,000 directories deep, links to root's
// files and a wide folder, holding 16 descriptors at most (os.RemoveAll
// holds one per level), follows no link, and leaves no trash.
func TestRemoveAllDeepTree(t *testing.T) {
	top := t.TempDir()
	victim := keep(t)
	os.Mkdir(top+"/planted", 0o700)
	plant(t, top+"/planted", 3000, victim)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), removeChildEnv+"="+top+"/planted")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("RemoveAll with 16 descriptors: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	if names, _ := os.ReadDir(top); len(names) != 0 {
		t.Errorf("left %v", names)
	}
	wantKept(t, victim)
	if pg, err := open(t, top).RemoveAll("planted"); err != nil || pg.Entries != 0 {
		t.Errorf("again: %+v, %v", pg, err)
	}
}

// A trash whose budget runs out says so, and the next Empty finishes it.
func TestTrashBudget(t *testing.T) {
	top := t.TempDir()
	for i := range 30 {
		os.MkdirAll(fmt.Sprintf("%s/x/d%d/e", top, i), 0o755)
	}
	d := open(t, top)
	tr, err := d.OpenTrash(TrashName)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Take(d, "x"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Take(d, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("taking what is gone: %v", err)
	}
	if pg := tr.Empty(5); !pg.Left || pg.Err == nil || pg.Entries < 5 {
		t.Errorf("budget 5: %+v", pg)
	}
	if pg := tr.Empty(0); pg.Left {
		t.Errorf("the rest: %+v", pg)
	}
	if _, err := os.Lstat(top + "/" + TrashName); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("trash left: %v", err)
	}
}

// A trash that another user owns, or others can write, is refused.
func TestTrashRefusesOthers(t *testing.T) {
	top := t.TempDir()
	os.Mkdir(top+"/"+TrashName, 0o777)
	os.Chmod(top+"/"+TrashName, 0o777)
	if _, err := open(t, top).OpenTrash(TrashName); err == nil {
		t.Error("a trash others can write accepted")
	}
	if os.Geteuid() == 0 {
		os.Chmod(top+"/"+TrashName, 0o700)
		os.Chown(top+"/"+TrashName, 65534, 65534)
		if _, err := open(t, top).OpenTrash(TrashName); err == nil {
			t.Error("a trash of uid 65534 accepted")
		}
	}
}
