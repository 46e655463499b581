package dirfd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// Write says how WriteAtomic replaces a file.
type Write struct {
	// Mode is the file's mode, whatever the umask.
	Mode uint32
	// Op, when set, names the crashpoint steps: Op+"-create" before the
	// temporary file is made, Op+"-write" before it is written,
	// Op+"-rename" before it replaces the file ("run", "spool").
	Op string
	// Regular refuses to replace anything but a regular file (a symlink
	// is a *SymlinkError); without it, a symlink in the file's place is
	// replaced itself, never followed.
	Regular bool
}

// TmpMarker is in the name of every temporary file WriteAtomic makes,
// ".<name>.tmp-<pid>"; TmpPID reads the pid back, for a sweep of dead
// writers' files.
const TmpMarker = ".tmp-"

// tmpMu serialises atomic writes within this process, so two goroutines
// never race for the same temporary file.
var tmpMu sync.Mutex

// WriteAtomic replaces name in d with data: a temporary file in d created
// exclusively and never through a symlink (O_EXCL|O_NOFOLLOW; createTemp), given
// w.Mode, written, fsynced, renamed over name (renameat: readers see the
// old or the new file, never a part), then d fsynced. Until the rename
// the old file is untouched, and on every error the temporary file is
// removed; the error names the file.
func (d *Dir) WriteAtomic(name string, data []byte, w Write) error {
	target := d.Join(name)
	if err := plainName(name); err != nil {
		return fmt.Errorf("write %s: %w", d.path, err)
	}
	if w.Regular {
		if err := d.mustBeRegular(name); err != nil {
			return err
		}
	}
	tmpMu.Lock()
	defer tmpMu.Unlock()
	fd, tmp, err := d.createTemp(name, w)
	if err != nil {
		return fmt.Errorf("write %s: create %s: %w", target, tmp, err)
	}
	hit(w.Op, "-write", d, tmp)
	err = writeAll(fd, data)
	if err == nil {
		err = Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err == nil {
		hit(w.Op, "-rename", d, name)
		if rerr := unix.Renameat(d.fd, tmp, d.fd, name); rerr != nil {
			err = fmt.Errorf("rename: %w", rerr)
		}
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("write %s (old content kept): %w", target, err)
	}
	if err := Fsync(d.fd); err != nil {
		return fmt.Errorf("write %s: replaced, but syncing the directory failed: %w", target, err)
	}
	return nil
}

// mustBeRegular refuses a name in d that exists and is not a regular file.
func (d *Dir) mustBeRegular(name string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &SymlinkError{Path: d.Join(name)}
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("refusing %s: not a regular file", d.Join(name))
	case err != nil && !errors.Is(err, unix.ENOENT):
		return &os.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	return nil
}

// createTemp creates the temporary file for name, mode w.Mode. One of the
// same name can only be a dead process's that had this pid (tmpMu is held)
// or a planted link: it is removed (never followed) and the create tried
// once more.
func (d *Dir) createTemp(name string, w Write) (int, string, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	tmp := "." + name + TmpMarker + strconv.Itoa(os.Getpid())
	hit(w.Op, "-create", d, tmp)
	fd, err := unix.Openat(d.fd, tmp, flags, w.Mode)
	if errors.Is(err, unix.EEXIST) {
		hit(w.Op, "-unlink", d, tmp)
		if uerr := unix.Unlinkat(d.fd, tmp, 0); uerr == nil {
			fd, err = unix.Openat(d.fd, tmp, flags, w.Mode)
		}
	}
	if err != nil {
		return -1, tmp, err
	}
	if err := unix.Fchmod(fd, w.Mode); err != nil { // the umask may have cut it
		unix.Close(fd)
		unix.Unlinkat(d.fd, tmp, 0)
		return -1, tmp, err
	}
	return fd, tmp, nil
}

// TmpPID is the pid in the name of a temporary file of WriteAtomic's,
// ok false for any other name.
func TmpPID(name string) (int, bool) {
	i := strings.LastIndex(name, TmpMarker)
	if !strings.HasPrefix(name, ".") || i < 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(name[i+len(TmpMarker):])
	return pid, err == nil && pid > 0
}

// DeadTemp says whether name is a temporary file of WriteAtomic's whose
// process is gone (never this process's): what a killed write left, for a
// sweep to remove.
func DeadTemp(name string) bool {
	pid, ok := TmpPID(name)
	return ok && pid != os.Getpid() && !ProcessAlive(pid)
}

// ProcessAlive says whether a process with this pid exists (EPERM means
// it does).
func ProcessAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// hit is crashpoint.Hit of op+step on name in d, when op is set.
func hit(op, step string, d *Dir, name string) {
	if crashpoint.On && op != "" {
		crashpoint.Hit(op+step, d.Join(name))
	}
}

// hitDir is crashpoint.Hit of op+step on d itself, when op is set.
func hitDir(op, step string, d *Dir) {
	if crashpoint.On && op != "" {
		crashpoint.Hit(op+step, d.path)
	}
}

// writeAll writes data, retrying short writes and EINTR.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("write: %w", unix.EIO)
		}
		data = data[n:]
	}
	return nil
}

// Fsync is fsync(2) of fd, retried on EINTR.
func Fsync(fd int) error {
	for {
		err := unix.Fsync(fd)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
		return nil
	}
}
