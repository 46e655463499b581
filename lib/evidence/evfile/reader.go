package evfile

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// OpenReader opens the existing <stateDir>/jobs for reading, as any user
// (a user reading their own job's record): it makes and changes nothing.
// The spool (which its users may search, not list: 0711) and jobs/ are
// opened from the spool's folder without following a symlink (a
// *dirfd.SymlinkError) and must be root's (or the reader's own) and not
// writable by group or others. A missing one is an error wrapping
// fs.ErrNotExist.
func OpenReader(stateDir string) (*Dir, error) {
	parent, name, err := openParent(stateDir)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	spool, err := openChecked(parent.FD(), name, parent.Join(name), unix.O_PATH)
	if err != nil {
		return nil, fmt.Errorf("evidence records: %w", err)
	}
	defer unix.Close(spool)
	path := parent.Join(name) + "/" + Sub
	jobs, err := openChecked(spool, Sub, path, unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("evidence records: %w", err)
	}
	defer unix.Close(jobs)
	d, err := wrap(jobs, path)
	if err != nil {
		return nil, fmt.Errorf("evidence records: %w", err)
	}
	return &Dir{d: d}, nil
}

// openChecked opens the directory name (at path) in the directory at,
// never through a symlink, with mode (O_PATH: search it, not read it),
// and checks it (readerCheck).
func openChecked(at int, name, path string, mode int) (int, error) {
	fd, err := unix.Openat(at, name, mode|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		if unix.Fstatat(at, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, &dirfd.SymlinkError{Path: path}
		}
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err == nil {
		err = readerCheck(path, &st)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// wrap is a dirfd.Dir of the open directory fd (at path): the same
// directory, opened again through /proc/self/fd (dirfd.Walk opens every
// step to read it, and the reader may only search the spool), compared by
// device and inode.
func wrap(fd int, path string) (*dirfd.Dir, error) {
	d, err := dirfd.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, err
	}
	var want unix.Stat_t
	got, err := d.Stat()
	if err == nil {
		err = unix.Fstat(fd, &want)
	}
	if err == nil && (got.Dev != want.Dev || got.Ino != want.Ino) {
		err = fmt.Errorf("%s: reopened through /proc/self/fd, it is another directory", path)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d.Named(path), nil
}
