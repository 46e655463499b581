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
// the base); p.Dir is made root's 0755, and p.Pipe and p.Log root's 0700
// and emptied (what a dead daemon left, or what the user planted while
// the pipe directory was theirs). A pre-existing pipe or log directory
// must belong to root or to uid, the job's user. A symlink anywhere is
// refused (ErrSymlink), and so is a directory another user owns.
//
// The daemon (root) makes its files in both at start: sockets, a FIFO,
// its pid file and the logs, server.log included (servers write it
// through the daemon). Only then does Start hand the pipe directory to
// the user (Grant), so no file the daemon makes can be one the user
// planted; the log directory stays root's.
func Create(p Paths, uid int) error {
	base, err := walk(filepath.Dir(p.Dir), true)
	if err != nil {
		return err
	}
	defer unix.Close(base)
	dir, err := subdir(base, p.Dir, 0o755)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := trust(dir, p.Dir, false); err != nil {
		return err
	}
	if err := unix.Fchmod(dir, 0o755); err != nil {
		return &os.PathError{Op: "chmod", Path: p.Dir, Err: err}
	}
	for _, full := range []string{p.Pipe, p.Log} {
		if err := rootDir(dir, full, uid); err != nil {
			return err
		}
	}
	return nil
}

// rootDir makes or takes over the directory full (in dir) as root's 0700
// and empties it.
func rootDir(dir int, full string, uid int) error {
	fd, err := subdir(dir, full, 0o700)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if int(st.Uid) != os.Geteuid() && int(st.Uid) != uid {
		return fmt.Errorf("mps: %s belongs to uid %d, neither root nor the job's user (uid %d); refusing", full, st.Uid, uid)
	}
	if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
		return &os.PathError{Op: "chown", Path: full, Err: err}
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return &os.PathError{Op: "chmod", Path: full, Err: err}
	}
	return empty(fd, full)
}

// empty removes what the open directory fd (path full) holds.
func empty(fd int, full string) error {
	dup, err := unix.Dup(fd)
	if err != nil {
		return &os.PathError{Op: "dup", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(dup), full)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("mps: read %s: %w", full, err)
	}
	for _, n := range names {
		if err := removeTree(fd, filepath.Join(full, n), 1); err != nil {
			return err
		}
	}
	return nil
}

// Grant hands p's pipe directory to the job's user uid:gid, mode 01700:
// only that user (and root) can reach the daemon's sockets, so no other
// user's process starts an MPS server, outside its own job's cgroup, on
// these GPUs; the sticky bit keeps the user from renaming or removing the
// daemon's files. The directory is opened without following a symlink.
// Exec.Start calls it once the daemon runs.
func Grant(p Paths, uid, gid int) error {
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
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: p.Pipe, Err: err}
	}
	if err := unix.Fchmod(fd, 0o700|unix.S_ISVTX); err != nil {
		return &os.PathError{Op: "chmod", Path: p.Pipe, Err: err}
	}
	return nil
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

// maxDepth bounds how deep Remove descends: MPS makes flat directories.
const maxDepth = 8

// Remove deletes p.Dir and everything in it without following a symlink:
// the path down to the base is walked as Create walks it, and below it a
// symlink is unlinked, never entered. A p.Dir already gone is no error.
// Call it once the daemon is gone (Quit), as the epilog does.
func Remove(p Paths) error {
	base, err := walk(filepath.Dir(p.Dir), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(base)
	return removeTree(base, p.Dir, 0)
}

// removeTree removes full (its last component, in dirfd): a directory
// with its contents, anything else (a symlink included) by unlinking it.
func removeTree(dirfd int, full string, depth int) error {
	name := filepath.Base(full)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unlink(dirfd, full, 0)
	}
	if depth >= maxDepth {
		return fmt.Errorf("mps: %s: more than %d directories deep; refusing", full, maxDepth)
	}
	fd, err := openDir(dirfd, full)
	if errors.Is(err, ErrSymlink) { // swapped for a link since the stat
		return unlink(dirfd, full, 0)
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), full)
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return fmt.Errorf("mps: read %s: %w", full, err)
	}
	for _, n := range names {
		if err := removeTree(fd, filepath.Join(full, n), depth+1); err != nil {
			f.Close()
			return err
		}
	}
	f.Close()
	return unlink(dirfd, full, unix.AT_REMOVEDIR)
}

// unlink removes full (its last component, in dirfd); gone already is fine.
func unlink(dirfd int, full string, flags int) error {
	if err := unix.Unlinkat(dirfd, filepath.Base(full), flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}
