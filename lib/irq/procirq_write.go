package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// WriteFile writes value to the IRQ file at node path np and returns what
// it reads afterwards, as host.Root.WriteFile does: one write(2) to the
// kernel's file. It never creates the file. A file nobody may write is an
// error wrapping ErrReadOnly.
func (p *ProcIRQ) WriteFile(np, value string) (string, error) {
	got, err := p.WriteWritable(np, value)
	if errors.Is(err, ErrReadOnly) {
		return "", fmt.Errorf("write %s: %w", np, err)
	}
	return got, err
}

// ErrReadOnly says an IRQ file's permissions let nobody write it: the
// kernel's mark of an IRQ whose affinity it keeps (managed, per-CPU).
var ErrReadOnly = errors.New("read-only (mode without a write bit)")

// WriteWritable is WriteFile for an IRQ file whose permissions let
// someone write it, told on the descriptor it writes through (one fstat,
// no separate look at the path first); for one nobody may write it
// writes nothing and returns ErrReadOnly (the kernel would refuse the
// write, and a fixture's file plays the kernel).
//
// A fixture's plain file is written in place, never emptied on the way:
// the value, padded with newlines to the old content's length, in one
// write at its start, then the file cut to the value. A process killed in
// between leaves the value and blank lines, which read as the value;
// never an empty file, which real procfs never shows (host.Root.WriteFile
// replaces a fixture's file by a rename for the same reason, at four
// times the system calls: a large node's restore writes a thousand IRQs).
func (p *ProcIRQ) WriteWritable(np, value string) (string, error) {
	fd, err := p.openNode(np, unix.O_RDWR)
	if errors.Is(err, fs.ErrPermission) {
		return p.readOnlyOr(np, err) // not root: a read-only file cannot be opened to write
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", p.pathErr("stat", np, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", fmt.Errorf("write %s: not a regular file", np)
	case st.Mode&0o222 == 0:
		return "", ErrReadOnly
	}
	if crashpoint.On { // the path is made only for a crash test's build
		crashpoint.Hit("write", p.root.Path(np))
	}
	if p.kernel {
		err = writeOnce(fd, value)
	} else {
		err = writeInPlace(fd, value, st.Size)
	}
	if err != nil {
		return "", fmt.Errorf("write %q to %s: %w", value, np, err)
	}
	b, err := preadFD(fd)
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", np, err)
	}
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// readOnlyOr is ErrReadOnly where the file at np has no write bit, else
// err (opening it to write was refused for another reason).
func (p *ProcIRQ) readOnlyOr(np string, err error) (string, error) {
	mode, merr := p.Mode(np)
	if merr == nil && mode&0o222 == 0 {
		return "", ErrReadOnly
	}
	return "", err
}

// writeOnce writes value to a kernel attribute in one write.
func writeOnce(fd int, value string) error {
	n, err := unix.Write(fd, []byte(value))
	if err == nil && n != len(value) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(value))
	}
	return err
}

// writeInPlace writes value over a fixture's plain file open as fd, of
// size bytes (see WriteWritable).
func writeInPlace(fd int, value string, size int64) error {
	b := []byte(value)
	for int64(len(b)) < size {
		b = append(b, '\n')
	}
	n, err := unix.Pwrite(fd, b, 0)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err == nil && len(b) > len(value) {
		err = unix.Ftruncate(fd, int64(len(value)))
	}
	return err
}

// Mode is the permission bits of the IRQ file at node path np, a link in
// its place refused (the write that follows refuses one on the way); a
// file that is not a regular one is an error. One fstatat.
func (p *ProcIRQ) Mode(np string) (uint32, error) {
	r, err := rel(np)
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(p.dir.FD(), r, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, p.pathErr("stat", np, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return 0, p.pathErr("open", np, unix.ELOOP)
	default:
		return 0, fmt.Errorf("write %s: not a regular file", np)
	}
	return st.Mode, nil
}
