package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// tmpMu serialises atomic writes within this process, so two goroutines
// never race for the same ".<name>.tmp-<pid>".
var tmpMu sync.Mutex

// tmpName is the temporary file WriteJSON writes before renaming it over name.
func tmpName(name string) string {
	return "." + name + ".tmp-" + strconv.Itoa(os.Getpid())
}

// writeAtomic replaces name in the directory dirfd with data: a temporary
// file created exclusively (never following a symlink), written, fsynced,
// renamed over name (replacing a symlink itself, never its target), then the
// directory fsynced. Until the rename succeeds the old file is untouched, and
// on every error the temporary file is removed. dir is for messages.
func writeAtomic(dirfd int, dir, name string, data []byte, perm uint32) error {
	target := filepath.Join(dir, name)
	tmp := tmpName(name)
	tmpMu.Lock()
	defer tmpMu.Unlock()
	crashpoint.HitAt("spool-create", dir, tmp)
	fd, err := createExcl(dirfd, tmp, perm)
	if err != nil {
		return fmt.Errorf("write %s: create %s: %w", target, tmp, err)
	}
	crashpoint.HitAt("spool-write", dir, tmp)
	err = writeAll(fd, data)
	if err == nil {
		err = fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err == nil {
		crashpoint.HitAt("spool-rename", dir, name)
		if rerr := unix.Renameat(dirfd, tmp, dirfd, name); rerr != nil {
			err = fmt.Errorf("rename: %w", rerr)
		}
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s (old content kept): %w", target, err)
	}
	if err := fsync(dirfd); err != nil {
		return fmt.Errorf("write %s: replaced, but syncing the directory failed: %w", target, err)
	}
	return nil
}

// createExcl creates a new file; a leftover of the same name can only be
// from a dead process that had our pid (we hold tmpMu), so it is removed and
// the create retried once.
func createExcl(dirfd int, name string, perm uint32) (int, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, perm)
	if errors.Is(err, unix.EEXIST) {
		crashpoint.Hit("spool-unlink", name)
		if uerr := unix.Unlinkat(dirfd, name, 0); uerr == nil {
			fd, err = unix.Openat(dirfd, name, flags, perm)
		}
	}
	if err != nil {
		return -1, err
	}
	if err := unix.Fchmod(fd, perm); err != nil { // the umask may have cut it
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, err
	}
	return fd, nil
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

func fsync(fd int) error {
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

// WriteFileAtomic replaces dir/name with data (mode perm) the way WriteJSON
// does, for directories that are not a spool (node_exporter's textfile
// directory): dir must exist; it is the admin's configured path, so a symlink
// to it is followed, but inside it nothing is: the temporary file is created
// exclusively and the rename replaces a planted link, not its target. The
// temporary name ".<name>.tmp-<pid>" is hidden from collectors that read only
// "*.prom". name must be a plain file name.
func WriteFileAtomic(dir, name string, data []byte, perm os.FileMode) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("write %s: %q is not a plain file name", dir, name)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("write %s: open directory %s: %w", filepath.Join(dir, name), dir, err)
	}
	defer unix.Close(dfd)
	return writeAtomic(dfd, dir, name, data, uint32(perm.Perm()))
}

// Sweep removes temporary files left in the spool by processes that died
// mid-write (".<name>.tmp-<pid>" whose pid is gone), and returns their names.
// Call it under Lock; a live writer's file is never touched.
func (s *Spool) Sweep() ([]string, error) {
	if err := s.writable("sweep", "."); err != nil {
		return nil, err
	}
	names, err := s.readNames()
	if err != nil {
		return nil, err
	}
	return sweep(s.fd, s.dir, names, func(string) bool { return true })
}

// SweepTemps removes what WriteFileAtomic(dir, name, ...) left behind in
// runs that died mid-write: ".<name>.tmp-<pid>" whose pid is gone. Other
// files in dir are never touched.
func SweepTemps(dir, name string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	prefix := "." + name + ".tmp-"
	return sweep(int(f.Fd()), dir, names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// sweep unlinks, in the directory dirfd, the names that are temporary files
// of dead processes and that keep accepts.
func sweep(dirfd int, dir string, names []string, keep func(string) bool) ([]string, error) {
	var removed []string
	for _, n := range names {
		i := strings.LastIndex(n, ".tmp-")
		if !strings.HasPrefix(n, ".") || i < 0 || !keep(n) {
			continue
		}
		pid, err := strconv.Atoi(n[i+len(".tmp-"):])
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		crashpoint.HitAt("spool-unlink", dir, n)
		if err := unix.Unlinkat(dirfd, n, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return removed, fmt.Errorf("sweep %s: %w", filepath.Join(dir, n), err)
		}
		removed = append(removed, n)
	}
	return removed, nil
}

// alive says whether a process with this pid exists (EPERM means it does).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
