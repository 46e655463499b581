package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// AppendLine appends line and "\n" to the spool file name (created 0600),
// in one write, then fsyncs. line must not contain a newline.
func (s *Spool) AppendLine(name string, line []byte) error {
	return s.AppendLines(name, [][]byte{line})
}

// AppendLines appends each line with its "\n" to the spool file name in a
// single write (O_APPEND, so concurrent appenders never interleave inside a
// line), then fsyncs. A line containing a newline is refused before anything
// is written. If the file ends in a torn line (an earlier write cut short by
// a full disk or a crash), a "\n" is written first so the fragment stays on
// a line of its own, which readers skip, and the new lines stay whole.
//
// Files are 0600: drift records name jobs and users, and the spool itself is
// 0700, so wider modes would grant nothing; reports are read by root.
func (s *Spool) AppendLines(name string, lines [][]byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.writable("append", name); err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, l := range lines {
		if bytes.ContainsAny(l, "\n") {
			return fmt.Errorf("append %s: a line contains a newline", s.path(name))
		}
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	crashpoint.HitAt("spool-open", s.dir, name)
	fd, err := unix.Openat(s.fd, name, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("append %s: is a symlink; refusing to follow it", s.path(name))
	case err != nil:
		return fmt.Errorf("append %s: %w", s.path(name), err)
	}
	defer unix.Close(fd)
	if err := checkRegular(fd); err != nil {
		return fmt.Errorf("append %s: %w", s.path(name), err)
	}
	data := buf.Bytes()
	// The torn-line check needs the file to itself: another appender's
	// write in progress also looks like a line without its "\n" yet.
	if lockFile(fd, appendLockWait) {
		defer unix.Flock(fd, unix.LOCK_UN)
		if torn, err := endsTorn(fd); err != nil {
			return fmt.Errorf("append %s: %w", s.path(name), err)
		} else if torn {
			data = append([]byte{'\n'}, data...)
		}
	}
	crashpoint.HitAt("spool-append", s.dir, name)
	n, err := unix.Write(fd, data)
	if err == nil && n < len(data) {
		err = fmt.Errorf("wrote %d of %d bytes: %w", n, len(data), io.ErrShortWrite)
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", s.path(name), err)
	}
	if err := dirfd.Fsync(fd); err != nil {
		return fmt.Errorf("append %s: %w", s.path(name), err)
	}
	return nil
}

// appendLockWait bounds how long an append waits for other appenders before
// writing anyway (still one O_APPEND write, only without the torn-line check).
const appendLockWait = 2 * time.Second

// lockFile takes an exclusive flock on fd, polling up to wait.
func lockFile(fd int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return true
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) || time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// endsTorn says whether the file is non-empty and its last byte is not "\n".
func endsTorn(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if st.Size == 0 {
		return false, nil
	}
	b := make([]byte, 1)
	if n, err := unix.Pread(fd, b, st.Size-1); err != nil || n != 1 {
		return false, fmt.Errorf("read last byte: %v", err)
	}
	return b[0] != '\n', nil
}

// OpenRead opens the spool file name for reading (no symlinks, regular files
// only). A missing file is an error wrapping os.ErrNotExist.
func (s *Spool) OpenRead(name string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return s.openRead(name)
}

// Remove deletes the spool file name; a missing file is not an error.
func (s *Spool) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.writable("remove", name); err != nil {
		return err
	}
	crashpoint.HitAt("spool-unlink", s.dir, name)
	if err := unix.Unlinkat(s.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", s.path(name), err)
	}
	return nil
}

// Rename renames the spool file from to to (replacing to), then syncs the
// directory. Neither may be a temporary or reserved name.
func (s *Spool) Rename(from, to string) error {
	for _, n := range []string{from, to} {
		if err := checkName(n); err != nil {
			return err
		}
	}
	if err := s.writable("rename", from); err != nil {
		return err
	}
	crashpoint.HitAt("spool-rename", s.dir, to)
	if err := unix.Renameat(s.fd, from, s.fd, to); err != nil {
		return fmt.Errorf("rename %s to %s: %w", s.path(from), to, err)
	}
	return dirfd.Fsync(s.fd)
}

// List returns the spool's file names starting with prefix, sorted, leaving
// out temporary files (".*"), the lock file and the format file.
func (s *Spool) List(prefix string) ([]string, error) {
	names, err := s.readNames()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, ".") || n == LockName || n == FormatName || !strings.HasPrefix(n, prefix) {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// readNames lists every entry of the spool through a fresh descriptor of the
// directory we hold (not its path).
func (s *Spool) readNames() ([]string, error) {
	if s.fd < 0 {
		return nil, nil
	}
	fd, err := unix.Openat(s.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	f := os.NewFile(uintptr(fd), s.dir)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	return names, nil
}
