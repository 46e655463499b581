package dirfd

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Read says which file ReadFile believes.
type Read struct {
	// Max bounds the file's size: a larger one is an error (ErrTooLarge).
	Max int64
	// Check, when set, says whether the open file (its fstat) can be
	// believed: its owner, its mode. Its error is ReadFile's as it is.
	Check func(st *unix.Stat_t) error
}

// ErrNotRegular and ErrTooLarge are wrapped by ReadFile's refusal of a
// file that is not a regular one (a FIFO, a device, a directory) or is
// larger than Read.Max.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than allowed")
)

// ReadFile reads the file name in d: opened without following a symlink
// (O_NOFOLLOW: a *SymlinkError) and without blocking (O_NONBLOCK: a FIFO
// never hangs the reader), it must be a regular file, pass r.Check and
// hold at most r.Max bytes, however it grows while read. A missing file
// is an *os.PathError wrapping fs.ErrNotExist.
func (d *Dir) ReadFile(name string, r Read) ([]byte, error) {
	full := d.Join(name)
	if err := plainName(name); err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &SymlinkError{Path: full}
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: full, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w", full, ErrNotRegular)
	}
	if r.Check != nil {
		if err := r.Check(&st); err != nil {
			return nil, err
		}
	}
	if st.Size > r.Max {
		return nil, fmt.Errorf("%s: %w: %d bytes, over %d", full, ErrTooLarge, st.Size, r.Max)
	}
	return readBounded(fd, full, st.Size, r.Max)
}

// readBounded reads fd (path full) to its end, size bytes expected, at
// most max.
func readBounded(fd int, full string, size, max int64) ([]byte, error) {
	buf := make([]byte, 0, size+1)
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
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%s: %w: over %d bytes", full, ErrTooLarge, max)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
