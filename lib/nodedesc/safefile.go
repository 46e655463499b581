package nodedesc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/host"
)

// The files under /run/gpuprep are written by root and read by every user:
// a user must not be able to plant one or redirect a write. So every
// directory below /run is created 0755 and opened without following a
// symlink (openat O_NOFOLLOW from its parent), must belong to the writer
// and be writable by it alone, and a file is written under a temporary
// name in that directory and renamed over the target (the same directory,
// so readers see the old or the new file, never a part); a symlink in the
// target's place is refused. A reader walks the same way and believes a
// directory or file only as trust says.
//
// Inside an enroot/pyxis user namespace the host's root and the host's
// nobody both read as the overflow uid, so a reader there cannot tell
// them apart: the protection is that nobody but root can ever create or
// write /run/gpuprep. A tmpfiles.d rule creates it root's 0755 at boot
// (examples/tmpfiles.d/gpuprep.conf), and the prolog (PrepareRunDir)
// creates it, or moves aside one that another user owns or can write.

// walkDir opens the node directory dir (below /run: "/run/gpuprep",
// "/run/gpuprep/jobs") component by component, never through a symlink,
// and returns its descriptor. check is called on each opened component
// (parent is its parent's descriptor) and returns the descriptor to go on
// with, or an error; it owns fd. With create, missing directories are
// made 0755 (and /run itself when a fixture root lacks it). A missing
// directory is otherwise an error wrapping fs.ErrNotExist; a symlink is
// refused with an error naming it.
func walkDir(r host.Root, dir string, create bool, check func(parent, fd int, name, full string) (int, error)) (int, error) {
	rest, ok := strings.CutPrefix(path.Clean(dir), "/run/")
	if !ok {
		return -1, fmt.Errorf("nodedesc: %s is not under /run", dir)
	}
	base := r.Path("/run")
	if create {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return -1, err
		}
	}
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: base, Err: err}
	}
	cur := base
	for _, c := range strings.Split(rest, "/") {
		cur += "/" + c
		if create {
			crashpoint.Hit("run-mkdir", cur)
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, &os.PathError{Op: "mkdir", Path: cur, Err: err}
			}
		}
		nfd, err := openSubdir(fd, c, cur)
		if err == nil {
			nfd, err = check(fd, nfd, c, cur)
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// openSubdir opens the directory name in dirfd (path full) without
// following a symlink.
func openSubdir(dirfd int, name, full string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, refuseLink(dirfd, name, full, err)
	}
	return fd, nil
}

// openDir opens dir for the writer (walkDir): each directory must be the
// writer's and writable by it alone (PrepareRunDir moves aside one that is
// not); with create, a mode other than 0755 (the umask's) is set to 0755.
func openDir(r host.Root, dir string, create bool) (int, error) {
	return walkDir(r, dir, create, func(_, fd int, _, full string) (int, error) {
		if err := checkDir(fd, full, create); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	})
}

// errSymlink is wrapped by the error for a symlink where a directory or
// file of ours should be.
var errSymlink = errors.New("it is a symlink")

// refuseLink turns an openat error on name (in directory dirfd, full path
// full) into one that says when name is a symlink (wrapping errSymlink).
func refuseLink(dirfd int, name, full string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("refusing %s: %w", full, errSymlink)
	}
	return &os.PathError{Op: "open", Path: full, Err: err}
}

// writerProblem says why the writer cannot trust the directory st: another
// user owns it, or others can write it; "" when it can.
func writerProblem(st *unix.Stat_t) string {
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Sprintf("owned by uid %d, not by the writer (uid %d)", st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Sprintf("writable by others (mode %#o)", st.Mode&0o7777)
	}
	return ""
}

// checkDir checks that the open directory fd (path full) belongs to this
// process's user and that only it can write it; with fix, a mode other
// than 0755 is set to 0755.
func checkDir(fd int, full string, fix bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if why := writerProblem(&st); why != "" {
		return fmt.Errorf("refusing %s: %s", full, why)
	}
	if fix && st.Mode&0o7777 != 0o755 {
		crashpoint.Hit("run-chmod", full)
		if err := unix.Fchmod(fd, 0o755); err != nil {
			return &os.PathError{Op: "chmod", Path: full, Err: err}
		}
	}
	return nil
}

// PrepareRunDir makes /run/gpuprep and /run/gpuprep/jobs under r the
// writer's (root's, in the prolog), 0755. One that another user owns or
// that others can write may already hold files they planted, which a
// reader in a user namespace could not tell from root's; fixing its owner
// or mode would keep them. It is renamed aside instead, within its parent
// (/run/.gpuprep.untrusted-<time>: readers never open it, and it is kept
// for the admin to look at), and made afresh. moved says, one line each,
// what was moved where and why. A symlink in their place is refused, not
// moved: only root can write /run.
func PrepareRunDir(r host.Root) (moved []string, err error) {
	fd, err := walkDir(r, NoticeDir, true, func(parent, fd int, name, full string) (int, error) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: full, Err: err}
		}
		why := writerProblem(&st)
		if why == "" {
			return fd, checkDir(fd, full, true)
		}
		unix.Close(fd)
		aside := "." + name + ".untrusted-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		crashpoint.Hit("run-rename", full)
		if err := unix.Renameat(parent, name, parent, aside); err != nil {
			return -1, &os.PathError{Op: "move aside", Path: full, Err: err}
		}
		moved = append(moved, fmt.Sprintf("%s was %s: moved aside to %s", full, why, path.Join(path.Dir(full), aside)))
		crashpoint.Hit("run-mkdir", full)
		if err := unix.Mkdirat(parent, name, 0o755); err != nil {
			return -1, &os.PathError{Op: "mkdir", Path: full, Err: err}
		}
		nfd, err := openSubdir(parent, name, full)
		if err != nil {
			return -1, err
		}
		if err := checkDir(nfd, full, true); err != nil {
			unix.Close(nfd)
			return -1, err
		}
		return nfd, nil
	})
	if err != nil {
		return moved, fmt.Errorf("node directory: %w", err)
	}
	unix.Close(fd)
	return moved, nil
}

// tmpSeq tells apart the temporary files of one process.
var tmpSeq atomic.Uint64

// writeAt replaces the file name in the open directory dirfd (path dir)
// with data, mode 0644, atomically: a temporary file in the same directory
// renamed over it. A symlink or anything but a regular file in its place is
// refused.
func writeAt(dirfd int, dir, name string, data []byte) error {
	full := dir + "/" + name
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("refusing %s: %w", full, errSymlink)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("refusing %s: not a regular file", full)
	case err != nil && !errors.Is(err, unix.ENOENT):
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	tmp := "." + name + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10)
	crashpoint.HitAt("run-create", dir, tmp)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: dir + "/" + tmp, Err: err}
	}
	err = unix.Fchmod(fd, 0o644) // the umask may have cut it
	crashpoint.HitAt("run-write", dir, tmp)
	for b := data; err == nil && len(b) > 0; {
		var n int
		n, err = unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			err = nil
		}
		b = b[max(n, 0):]
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		crashpoint.Hit("run-rename", full)
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return &os.PathError{Op: "write", Path: full, Err: err}
	}
	return nil
}

// maxFile bounds a description or notice read: a description of a large
// node is some tens of KiB.
const maxFile = 4 << 20

// overflowUID is the owner a user namespace shows for a file whose owner
// it does not map (/proc/sys/kernel/overflowuid, 65534 unless changed):
// inside an enroot/pyxis container the host's root-owned description
// shows as owned by it, and so does a file of the host's nobody.
const overflowUID = 65534

// uidMapPath is the calling process's user namespace uid mapping.
const uidMapPath = "/proc/self/uid_map"

// trust is whose directories and files a reader believes: root's, its
// own, and the overflow uid's only inside a user namespace, where root's
// show as it. Outside one, a file of uid 65534 is nobody's, not root's.
type trust struct {
	r      host.Root
	userns int // 0 not read yet, 1 in a user namespace, -1 not
}

// inUserNS says whether the reader runs in a user namespace: its
// /proc/self/uid_map (read through the root) is not the initial
// namespace's identity map "0 0 4294967295". An unreadable map is taken
// as no user namespace: the stricter reading.
func (t *trust) inUserNS() bool {
	if t.userns == 0 {
		t.userns = -1
		if b, err := t.r.ReadFile(uidMapPath); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 && !slices.Equal(f, []string{"0", "0", "4294967295"}) {
				t.userns = 1
			}
		}
	}
	return t.userns > 0
}

// problem says why the reader cannot trust st (a directory or file at
// full): an owner other than root, the reader or (in a user namespace)
// the overflow uid, or writable by others than its owner; "" when it can.
func (t *trust) problem(st *unix.Stat_t) string {
	switch uid := st.Uid; {
	case uid == 0 || int(uid) == os.Geteuid():
	case uid == overflowUID && t.inUserNS():
	case uid == overflowUID:
		return fmt.Sprintf("owned by uid %d (nobody), not root; outside a user namespace only root's is read", uid)
	default:
		return fmt.Sprintf("owned by uid %d, not root", uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Sprintf("writable by others (mode %#o)", st.Mode&0o777)
	}
	return ""
}

// missingError is the error for a file under /run/gpuprep that does not
// exist: "<path>: node description missing", said once, and both ErrMissing
// and fs.ErrNotExist for errors.Is.
type missingError struct{ path string }

func (e *missingError) Error() string { return e.path + ": " + ErrMissing.Error() }

func (e *missingError) Is(target error) bool { return target == ErrMissing || target == fs.ErrNotExist }

// readTrusted reads the file at node path p for a reader that must trust
// it: each directory from /run/gpuprep down and the file are opened
// without following a symlink and must be trusted (trust.problem); the
// file must be regular. A missing file or directory is an error wrapping
// ErrMissing (and fs.ErrNotExist); an untrusted one wraps ErrStale.
func readTrusted(r host.Root, p string) ([]byte, error) {
	full := r.Path(p)
	t := &trust{r: r}
	dir, name := path.Split(p)
	dfd, err := walkDir(r, dir, false, func(_, fd int, _, full string) (int, error) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: full, Err: err}
		}
		if why := t.problem(&st); why != "" {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w: directory %s", full, ErrStale, why)
		}
		return fd, nil
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, &missingError{path: full}
	case errors.Is(err, errSymlink):
		return nil, fmt.Errorf("%w: %w", ErrStale, err)
	case err != nil:
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, &missingError{path: full}
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s: %w: %w", full, ErrStale, errSymlink)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w: not a regular file", full, ErrStale)
	}
	if why := t.problem(&st); why != "" {
		return nil, fmt.Errorf("%s: %w: %s", full, ErrStale, why)
	}
	if st.Size > maxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", full, maxFile)
	}
	buf := make([]byte, 0, st.Size+1)
	for {
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: full, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > maxFile {
			return nil, fmt.Errorf("%s: larger than %d bytes", full, maxFile)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
