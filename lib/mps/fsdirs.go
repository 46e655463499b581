package mps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is wrapped by the error for a symlink where one of the
// daemon's directories, or a directory above them, should be.
var ErrSymlink = errors.New("is a symlink; refusing")

// Create makes p's directories for a new daemon, as root does in the
// prolog before Exec.Start: every directory from / down to the base is
// opened without following a symlink (openat O_NOFOLLOW), missing ones are
// made 0755, and each must belong to root (this process's user) and be
// writable by it alone (a sticky directory like /tmp may be an ancestor of
// the base). p.Dir is kept when it is a directory of root's that nobody
// else may write (an earlier daemon's, or one a caller made for the
// simulated daemon's markers), else moved aside; p.Pipe and p.Log, with
// whatever they hold (what a dead daemon left, or what a user planted
// where an older gpuprep gave them the pipe directory), are always moved
// aside into the base's TrashName and made anew, root's 0700; the trash
// is emptied (Remove). A symlink on the way to the base is refused
// (ErrSymlink), and so is a directory another user owns or may write
// there. uid is the job's user, for messages.
//
// The daemon (root) makes its files in both at start: sockets, a FIFO,
// its pid file and the logs, server.log included (servers write it
// through the daemon). Only then does Start give the user search access
// to the pipe directory (Grant); both directories stay root's.
func Create(p Paths, uid int) error {
	base, err := walk(filepath.Dir(p.Dir), true)
	if err != nil {
		return err
	}
	defer unix.Close(base)
	trash, trashPath, err := openTrash(base, filepath.Dir(p.Dir))
	if err != nil {
		return err
	}
	defer unix.Close(trash)
	dir, err := daemonDir(base, trash, p.Dir)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	for _, full := range []string{p.Pipe, p.Log} {
		if err := moveInto(dir, filepath.Base(full), trash); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "rename into " + trashPath, Path: full, Err: err}
		}
		if err := newRootDir(dir, full); err != nil {
			return fmt.Errorf("%w (the daemon of uid %d)", err, uid)
		}
	}
	emptyTrash(base, trash, trashPath) // what it leaves, the next Remove goes on with
	return nil
}

// daemonDir opens the daemon's directory full (in base): the one there
// when it is a directory of root's nobody else may write, else (missing,
// a symlink, a file, another's) a new one, root's 0755, what was there
// moved into trash.
func daemonDir(base, trash int, full string) (int, error) {
	fd, err := openDir(base, full)
	if err == nil {
		if trust(fd, full, false) == nil {
			return fd, rootOnly(fd, full, 0o755)
		}
		unix.Close(fd)
	}
	if err := moveInto(base, filepath.Base(full), trash); err != nil && !errors.Is(err, unix.ENOENT) {
		return -1, &os.PathError{Op: "rename aside", Path: full, Err: err}
	}
	if err := unix.Mkdirat(base, filepath.Base(full), 0o755); err != nil {
		return -1, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	if fd, err = openDir(base, full); err != nil {
		return -1, err
	}
	return fd, rootOnly(fd, full, 0o755)
}

// newRootDir makes the directory full (its last component, in dir) as
// root's 0700; it must not exist.
func newRootDir(dir int, full string) error {
	if err := unix.Mkdirat(dir, filepath.Base(full), 0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	fd, err := openDir(dir, full)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return rootOnly(fd, full, 0o700)
}

// rootOnly makes the open directory fd (path full) this process's (root's)
// with mode, whatever the umask left.
func rootOnly(fd int, full string, mode uint32) error {
	if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
		return &os.PathError{Op: "chown", Path: full, Err: err}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: full, Err: err}
	}
	return nil
}

// Grant gives the job's user uid search access to p's pipe directory, and
// nothing more (a POSIX ACL entry user:<uid>:--x; acl.go): that user's
// clients reach the daemon's control socket by name, and no other user's
// process starts an MPS server, outside its own job's cgroup, on these
// GPUs. The directory stays root's, so the user can neither list it, nor
// make, rename or remove anything in it (a sticky directory of theirs
// would let them remove root's files: the sticky bit does not bind a
// directory's owner). It is opened without following a symlink, and must
// be root's and writable by root alone. Exec.Start calls it once the
// daemon runs. A file system without ACLs is an error wrapping ErrNoACL.
func Grant(p Paths, uid int) error {
	base, err := walk(p.Dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(base)
	fd, err := openDir(base, p.Pipe)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := trust(fd, p.Pipe, false); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return &os.PathError{Op: "chmod", Path: p.Pipe, Err: err}
	}
	return grantSearch(fd, p.Pipe, uid)
}

// walk opens the directory path from / down, component by component,
// never through a symlink, and checks each (trust); with create, missing
// directories are made 0755. Without create, a missing one is an error
// wrapping fs.ErrNotExist.
func walk(path string, create bool) (int, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, fmt.Errorf("mps: %q: want a clean absolute path", path)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	cur := ""
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, c := range parts {
		if c == "" {
			continue
		}
		cur += "/" + c
		var nfd int
		if create {
			nfd, err = subdir(fd, cur, 0o755)
		} else {
			nfd, err = openDir(fd, cur)
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
		if err := trust(fd, cur, i < len(parts)-1); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// subdir opens the directory full (its last component, in dirfd; openDir),
// making it with mode when it is missing.
func subdir(dirfd int, full string, mode uint32) (int, error) {
	fd, err := openDir(dirfd, full)
	if !errors.Is(err, fs.ErrNotExist) {
		return fd, err
	}
	if err := unix.Mkdirat(dirfd, filepath.Base(full), mode); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	return openDir(dirfd, full)
}

// openDir opens the directory full (its last component, in dirfd) without
// following a symlink; a symlink is an error wrapping ErrSymlink.
func openDir(dirfd int, full string) (int, error) {
	name := filepath.Base(full)
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return -1, fmt.Errorf("mps: %s %w", full, ErrSymlink)
	}
	return -1, &os.PathError{Op: "open", Path: full, Err: err}
}

// trust checks the open directory fd (path full): it must belong to root
// or to this process's user, and nobody else may write it, except, for
// an ancestor of the base, a sticky directory like /tmp.
func trust(fd int, full string, ancestor bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("mps: %s belongs to uid %d, not root; refusing", full, st.Uid)
	}
	if st.Mode&0o022 != 0 && !(ancestor && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("mps: %s is writable by others (mode %#o); refusing", full, st.Mode&0o7777)
	}
	return nil
}
