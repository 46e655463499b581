package nodedesc

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// The files under /run/gpuprep are written by root and read by every user:
// a user must not be able to plant one or redirect a write. So every
// directory below /run is created 0755 and opened without following a
// symlink (openat O_NOFOLLOW from its parent), must belong to the writer,
// and a file is written under a temporary name in that directory and
// renamed over the target (the same directory, so readers see the old or
// the new file, never a part); a symlink in the target's place is refused.

// openDir opens the node directory dir (below /run: "/run/gpuprep",
// "/run/gpuprep/jobs") and returns its descriptor. With create, missing
// directories are made 0755 (and /run itself when a fixture root lacks it)
// and a wrong mode is set to 0755. A symlink on the way, or a directory
// another user owns, is refused with an error naming it. Without create a
// missing directory is an error wrapping fs.ErrNotExist.
func openDir(r host.Root, dir string, create bool) (int, error) {
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
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, &os.PathError{Op: "mkdir", Path: cur, Err: err}
			}
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = refuseLink(fd, c, cur, err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = nfd
		if err := checkDir(fd, cur, create); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// refuseLink turns an openat error on name (in directory dirfd, full path
// full) into one that says when name is a symlink.
func refuseLink(dirfd int, name, full string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("refusing %s: it is a symlink", full)
	}
	return &os.PathError{Op: "open", Path: full, Err: err}
}

// checkDir checks that the open directory fd (path full) belongs to this
// process's user; with fix, a mode other than 0755 is set to 0755.
func checkDir(fd int, full string, fix bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("refusing %s: owned by uid %d, not by the writer (uid %d)", full, st.Uid, euid)
	}
	if fix && st.Mode&0o7777 != 0o755 {
		if err := unix.Fchmod(fd, 0o755); err != nil {
			return &os.PathError{Op: "chmod", Path: full, Err: err}
		}
	}
	return nil
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
		return fmt.Errorf("refusing %s: it is a symlink", full)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("refusing %s: not a regular file", full)
	case err != nil && !errors.Is(err, unix.ENOENT):
		return &os.PathError{Op: "stat", Path: full, Err: err}
	}
	tmp := "." + name + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: dir + "/" + tmp, Err: err}
	}
	err = unix.Fchmod(fd, 0o644) // the umask may have cut it
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
// shows as owned by it. Only root can create files in /run/gpuprep (root's,
// 0755; Write refuses any other), so such a file is still the prolog's.
const overflowUID = 65534

// readTrusted reads the file at node path p for a reader that must trust
// it: opened without following a symlink, a regular file, owned by root
// (or, in a user namespace, the overflow uid that stands for it) or by the
// reader itself, writable by its owner only. A missing file is an
// error wrapping ErrMissing (and fs.ErrNotExist); an untrusted one wraps
// ErrStale.
func readTrusted(r host.Root, p string) ([]byte, error) {
	full := r.Path(p)
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("%s: %w (%w)", full, ErrMissing, os.ErrNotExist)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s: %w: it is a symlink", full, ErrStale)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: full, Err: err}
	}
	switch euid := os.Geteuid(); {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%s: %w: not a regular file", full, ErrStale)
	case st.Uid != 0 && int(st.Uid) != euid && st.Uid != overflowUID:
		return nil, fmt.Errorf("%s: %w: owned by uid %d, not root", full, ErrStale, st.Uid)
	case st.Mode&0o022 != 0:
		return nil, fmt.Errorf("%s: %w: writable by others (mode %#o)", full, ErrStale, st.Mode&0o777)
	case st.Size > maxFile:
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
