package mps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// ErrSymlink is wrapped by the error for a symlink where one of the
// daemon's directories, or a directory above them, should be.
var ErrSymlink = dirfd.ErrSymlink

// Create makes p's directories for a new daemon, as root does in the
// prolog before Exec.Start: the base (filepath.Dir(p.Dir)) is opened from
// / down without following a symlink (OpenBase; missing directories are
// made 0755), then CreateIn. A symlink on the way to the base is refused
// (ErrSymlink), and so is a directory another user owns or may write
// there (a sticky directory like /tmp may be an ancestor of the base).
// uid is the job's user, for messages.
func Create(p Paths, uid int) error {
	base, err := OpenBase(filepath.Dir(p.Dir), true)
	if err != nil {
		return err
	}
	defer base.Close()
	return CreateIn(base, p, uid)
}

// CreateIn makes p's directories in base, the open directory of p.Dir (the
// run directory's mps, opened by lib/rundir; OpenBase): p.Dir is kept when
// it is a directory of root's (this process's user's) that nobody else may
// write (an earlier daemon's, or one a caller made for the simulated
// daemon's markers), else moved aside; p.Pipe and p.Log, with whatever
// they hold (what a dead daemon left, or what a user planted where an
// older gpuprep gave them the pipe directory), are always moved aside into
// the base's TrashName and made anew, root's 0700; the trash is emptied
// (dirfd.Trash).
//
// The daemon (root) makes its files in both at start: sockets, a FIFO,
// its pid file and the logs, server.log included (servers write it
// through the daemon). Only then does Start give the user search access
// to the pipe directory (Grant); both directories stay root's.
func CreateIn(base *dirfd.Dir, p Paths, uid int) error {
	if err := inBase(base, p); err != nil {
		return err
	}
	trash, err := base.OpenTrash(TrashName)
	if err != nil {
		return err
	}
	defer trash.Close()
	dir, err := daemonDir(base, trash, filepath.Base(p.Dir))
	if err != nil {
		return err
	}
	defer dir.Close()
	for _, full := range []string{p.Pipe, p.Log} {
		if err := trash.Take(dir, filepath.Base(full)); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		sub, err := dir.MkdirAt(filepath.Base(full), dirfd.Mkdir{Mode: 0o700, Own: true, Check: trustDir})
		if err != nil {
			return fmt.Errorf("%w (the daemon of uid %d)", err, uid)
		}
		sub.Close()
	}
	trash.Empty(0) // what it leaves, the next Remove goes on with
	return nil
}

// inBase refuses paths p whose daemon directory is not in base.
func inBase(base *dirfd.Dir, p Paths) error {
	if filepath.Dir(p.Dir) != base.Path() {
		return fmt.Errorf("mps: %s is not in %s", p.Dir, base.Path())
	}
	return nil
}

// daemonDir opens the daemon's directory name (in base): the one there
// when it is a directory of root's nobody else may write, else (missing,
// a symlink, a file, another's) a new one, what was there moved into
// trash; root's 0755 either way.
func daemonDir(base *dirfd.Dir, trash *dirfd.Trash, name string) (*dirfd.Dir, error) {
	m := dirfd.Mkdir{Mode: 0o755, Own: true, Check: trustDir}
	if dir, err := base.MkdirAt(name, m); err == nil {
		return dir, nil
	}
	if err := trash.Take(base, name); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	return base.MkdirAt(name, m)
}

// Grant gives the job's user uid search access to p's pipe directory, and
// nothing more (a POSIX ACL entry user:<uid>:--x; acl.go): that user's
// clients reach the daemon's control socket by name, and no other user's
// process starts an MPS server, outside its own job's cgroup, on these
// GPUs. The directory stays root's, so the user can neither list it, nor
// make, rename or remove anything in it (a sticky directory of theirs
// would let them remove root's files: the sticky bit does not bind a
// directory's owner). It is opened from / down without following a
// symlink (OpenBase), and must be root's and writable by root alone.
// Exec.Start calls it once the daemon runs. A file system without ACLs is
// an error wrapping ErrNoACL.
func Grant(p Paths, uid int) error {
	dir, err := OpenBase(p.Dir, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	pipe, err := dir.Walk(filepath.Base(p.Pipe), dirfd.Walk{Check: trustCheck})
	if err != nil {
		return err
	}
	defer pipe.Close()
	if err := unix.Fchmod(pipe.FD(), 0o700); err != nil {
		return &os.PathError{Op: "chmod", Path: p.Pipe, Err: err}
	}
	return grantSearch(pipe.FD(), p.Pipe, uid)
}

// OpenBase opens the directory path from / down, component by component,
// never through a symlink (dirfd.WalkPath), and checks each (trust); with
// create, missing directories are made 0755. Without create, a missing one
// is an error wrapping fs.ErrNotExist.
func OpenBase(path string, create bool) (*dirfd.Dir, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fmt.Errorf("mps: %q: want a clean absolute path", path)
	}
	return dirfd.WalkPath(path, dirfd.Walk{Mkdir: create, Mode: 0o755, Check: trustCheck})
}

// trustCheck is trust for dirfd.Walk: an ancestor of the last directory
// may be a sticky one others can write, like /tmp.
func trustCheck(d *dirfd.Dir, st *unix.Stat_t, last bool) error {
	return trust(st, d.Path(), !last)
}

// trustDir is trust for dirfd.Mkdir: no exception for a sticky directory.
func trustDir(d *dirfd.Dir, st *unix.Stat_t) error { return trust(st, d.Path(), false) }

// trust checks a directory (fstat st, path full): it must belong to root
// or to this process's user, and nobody else may write it, except, for an
// ancestor of the base, a sticky directory like /tmp.
func trust(st *unix.Stat_t, full string, ancestor bool) error {
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("mps: %s belongs to uid %d, not root; refusing", full, st.Uid)
	}
	if st.Mode&0o022 != 0 && !(ancestor && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("mps: %s is writable by others (mode %#o); refusing", full, st.Mode&0o7777)
	}
	return nil
}
