package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// maxJSON caps what ReadJSON loads: spool JSON files are small, and a huge
// one is a bug or an attack, not state.
const maxJSON = 16 << 20

// ReadJSON decodes the spool file name into v. A missing file is found ==
// false and no error. A symlink, a non-regular file, an empty file or one
// that does not parse is an error naming the file; v is then unspecified.
func (s *Spool) ReadJSON(name string, v any) (found bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	f, err := s.openRead(name)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJSON+1))
	if err != nil {
		return true, fmt.Errorf("read %s: %w", s.path(name), err)
	}
	switch {
	case len(data) > maxJSON:
		return true, fmt.Errorf("read %s: larger than %d bytes", s.path(name), maxJSON)
	case len(data) == 0:
		return true, fmt.Errorf("read %s: empty file (not valid JSON)", s.path(name))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("read %s: not valid JSON: %w", s.path(name), err)
	}
	return true, nil
}

// WriteJSON atomically replaces the spool file name with v as indented JSON
// (mode 0600) through dirfd.Dir.WriteAtomic: ".<name>.tmp-<pid>" is created
// exclusively, written and fsynced, renamed over name, and the directory
// fsynced. On any error,
// ENOSPC included, the old file is intact, the temporary file is gone, and
// the error names the file.
func (s *Spool) WriteJSON(name string, v any) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.writable("write", name); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: encode: %w", s.path(name), err)
	}
	return s.d.WriteAtomic(name, append(data, '\n'), dirfd.Write{Mode: 0o600, Op: "spool"})
}

// openRead opens a spool file for reading without following a symlink and
// without blocking on a FIFO, and checks that it is a regular file. A missing
// file is an error wrapping os.ErrNotExist.
func (s *Spool) openRead(name string) (*os.File, error) {
	if s.fd < 0 {
		return nil, fmt.Errorf("read %s: %w", s.path(name), os.ErrNotExist)
	}
	fd, err := unix.Openat(s.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("read %s: %w", s.path(name), os.ErrNotExist)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("read %s: is a symlink; refusing to follow it", s.path(name))
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", s.path(name), err)
	}
	if err := checkRegular(fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("read %s: %w", s.path(name), err)
	}
	return os.NewFile(uintptr(fd), s.path(name)), nil
}

// checkRegular refuses anything but a regular file, and clears O_NONBLOCK.
func checkRegular(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("not a regular file (mode %o)", st.Mode)
	}
	return unix.SetNonblock(fd, false)
}
