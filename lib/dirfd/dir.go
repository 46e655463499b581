// Package dirfd is gpuprep's one way of touching the directories it keeps
// state in (the run directory /run/gpuprep, lib/rundir; the spool
// /var/lib/gpuprep, lib/state; the MPS daemons' directories, lib/mps):
// every call is relative to the descriptor of a directory already opened
// and checked, never by a path, and never follows a symbolic link.
//
// It holds the one no-symlink walker (Walk), the one atomic writer
// (WriteAtomic), the bounded no-follow reader (ReadFile), the directory
// maker (MkdirAt) and the flat removal that no depth and no descriptor
// limit stops (Trash, RemoveAll). What a directory or file must be to be
// believed (its owner, its mode) is the caller's to say: each package
// keeps its own rule and its own words for a refusal.
//
// It imports nothing of gpuprep but lib/crashpoint, so srunwrap links it
// at no cost.
package dirfd

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory: its descriptor and its path (for messages
// only: nothing is ever opened by it once the directory is open).
type Dir struct {
	fd   int
	path string
}

// Open opens the directory at path by its path, symlinks followed: the
// start of a walk, a directory the caller trusts as it is (a root's /run,
// "/", the admin's configured directory).
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Named gives d another path for its messages (the path its owner was
// given, where d was reached through the real one), and returns d.
func (d *Dir) Named(path string) *Dir {
	d.path = path
	return d
}

// FD is the directory's descriptor, for the *at calls of a caller.
func (d *Dir) FD() int { return d.fd }

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

// Join is the path of name in d, for messages.
func (d *Dir) Join(name string) string {
	if d.path == "/" {
		return "/" + name
	}
	return d.path + "/" + name
}

// Close releases the descriptor; later calls do nothing.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Stat is fstat of the open directory.
func (d *Dir) Stat() (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return &st, nil
}

// Lstat is fstatat of name in d, not following a symlink.
func (d *Dir) Lstat(name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return &st, nil
}

// OpenDir opens the directory name in d without following a symlink. A
// symlink is a *SymlinkError; a missing name an error wrapping
// fs.ErrNotExist.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := plainName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.refuseLink(name, "open", err)
	}
	return &Dir{fd: fd, path: d.Join(name)}, nil
}

// Reopen opens d again: a descriptor of its own (its own offset, its own
// lifetime).
func (d *Dir) Reopen() (*Dir, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	return &Dir{fd: fd, path: d.path}, nil
}

// Unlink removes the file name of d (a symlink itself, never its
// target); a missing one is no error.
func (d *Dir) Unlink(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// ErrSymlink is wrapped by every refusal of a symlink where a directory or
// file should be.
var ErrSymlink = errors.New("it is a symlink")

// SymlinkError is a symlink found at Path where a directory or file of
// gpuprep's should be: refused, never followed.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string { return "refusing " + e.Path + ": " + ErrSymlink.Error() }

func (e *SymlinkError) Unwrap() error { return ErrSymlink }

// refuseLink turns the error of op on name (in d) into a *SymlinkError
// when name is a symlink, else an *os.PathError.
func (d *Dir) refuseLink(name, op string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &SymlinkError{Path: d.Join(name)}
	}
	return &os.PathError{Op: op, Path: d.Join(name), Err: err}
}

// plainName refuses a name that is not one component of a path.
func plainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q is not a plain file name", name)
	}
	return nil
}
