package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// WriteFile writes a kernel file and reads it back. A kernel attribute may
// accept a write and keep another value (an unsupported governor, a clamped
// number); the read-back value is returned so the caller can verify. It
// never creates a file: a missing one is an error naming its path.
//
// A kernel attribute (sysfs, procfs, cgroupfs, debugfs, tracefs,
// securityfs: told by fstatfs on the opened file) takes the value in one
// write(2), and the kernel swaps it in whole; so does any file that is not
// a regular one (a device). A fixture root's file is a
// plain file on ext4, tmpfs or overlayfs, where truncating and then writing
// would leave an empty file to a process killed in between, which real
// sysfs never shows and which a rollback would then trip over. So a plain
// file is replaced atomically instead: the value goes to a temporary file
// ".<name>.gpuprep-tmp-<pid>-<n>" in the real directory of the target (the
// path may pass through a symlinked directory, as cpu<N>/cpufreq ->
// ../cpufreq/policy<N>), with the target's mode, which then takes the
// target's place in one step (swapIn). No fsync: a fixture does not have to
// survive a power cut.
func (r Root) WriteFile(p, value string) (string, error) {
	full := r.Path(p)
	fd, err := unix.Open(full, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: full, Err: err}
	}
	plain, err := plainFile(fd)
	if err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	crashpoint.Hit("write", full)
	if plain {
		err = replaceFile(fd, full, value)
	} else {
		err = writeOnce(fd, value)
	}
	if err != nil {
		return "", fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	got, err := r.ReadString(p)
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", p, err)
	}
	return got, nil
}

// kernelFSMagic are the statfs types of kernel file systems, whose files
// take a value in one write.
var kernelFSMagic = []int64{
	unix.SYSFS_MAGIC, unix.PROC_SUPER_MAGIC, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC,
	unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC,
}

// onKernelFS reports whether the open file fd lies on a kernel file system.
func onKernelFS(fd int) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false, fmt.Errorf("statfs: %w", err)
	}
	return slices.Contains(kernelFSMagic, int64(st.Type)), nil
}

// plainFile reports whether the open file fd is a regular file outside the
// kernel file systems (a fixture's), which WriteFile replaces by a rename;
// kernel attributes and devices take their one write.
func plainFile(fd int) (bool, error) {
	kernel, err := onKernelFS(fd)
	if err != nil || kernel {
		return false, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}

// writeOnce writes value to a kernel attribute in one write and closes fd:
// sysfs takes an attribute in one write; a short write is an error.
func writeOnce(fd int, value string) error {
	n, werr := unix.Write(fd, []byte(value))
	cerr := unix.Close(fd)
	if werr == nil && n != len(value) {
		werr = io.ErrShortWrite
	}
	if werr != nil {
		return werr
	}
	return cerr
}

// tmpSeq tells apart the temporary files of one process (CPUs sharing a
// cpufreq policy write the same file from several goroutines).
var tmpSeq atomic.Uint64

// tmpName is the name of the n-th temporary file replacing base.
func tmpName(base string, n uint64) string {
	return "." + base + ".gpuprep-tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(n, 10)
}

// replaceFile replaces the plain file open as fd (opened by the path full)
// with one holding value, and closes fd. The file replaced is the one
// open(2) reached, symlinks followed.
func replaceFile(fd int, full, value string) error {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	var real string
	if err == nil {
		real, err = openedPath(full)
	}
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	dir, base := filepath.Split(real)
	var tmp string
	var tfd int
	for tries := 0; ; tries++ {
		tmp = filepath.Join(dir, tmpName(base, tmpSeq.Add(1)))
		tfd, err = unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o777)
		// A name left by a killed process of the same pid: take the next.
		if err == nil || !errors.Is(err, unix.EEXIST) || tries == 100 {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "create", Path: tmp, Err: err}
	}
	err = unix.Fchmod(tfd, st.Mode&0o7777) // the umask may have cut the mode
	if err == nil {
		err = writeFull(tfd, value)
	}
	if cerr := unix.Close(tfd); err == nil {
		err = cerr
	}
	if err == nil {
		err = swapIn(tmp, real)
	}
	if err != nil {
		unix.Unlink(tmp)
		return &fs.PathError{Op: "replace", Path: real, Err: err}
	}
	return nil
}

// openedPath is the path of the file opened by the path full,
// every symlink resolved. It walks the path again rather than read
// /proc/self/fd/<fd>: when another writer swapped the file meanwhile, the
// descriptor names the old file under that writer's temporary name, which
// that writer is about to unlink; the path always names the file in place.
func openedPath(full string) (string, error) {
	return filepath.EvalSymlinks(full)
}

// swapIn puts the file tmp in the place of real, atomically, and removes
// the file it replaced. It exchanges the two names (renameat2
// RENAME_EXCHANGE) and then unlinks tmp, rather than renaming tmp over
// real: ext4 (auto_da_alloc) and btrfs start writing out the data of a
// file renamed over another, which made each fixture write wait on the
// disk (0.75 ms against 0.1 ms on ext4); an exchange is left alone. Where
// the file system cannot exchange, a plain rename.
func swapIn(tmp, real string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, real, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		// tmp now names the old file. Were the unlink to fail, the
		// value is in place all the same.
		unix.Unlink(tmp)
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return unix.Rename(tmp, real)
	}
	return err
}

// writeFull writes all of value to a plain file.
func writeFull(fd int, value string) error {
	b := []byte(value)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		b = b[n:]
	}
	return nil
}
