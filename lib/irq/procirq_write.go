package irq

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// WriteFile writes value to the IRQ file at node path np and returns what
// it reads afterwards, as host.Root.WriteFile does: one write(2) to the
// kernel's file. It never creates the file.
//
// A fixture's plain file is written in place, never emptied on the way:
// the value, padded with newlines to the old content's length, in one
// write at its start, then the file cut to the value. A process killed in
// between leaves the value and blank lines, which read as the value;
// never an empty file, which real procfs never shows (host.Root.WriteFile
// replaces a fixture's file by a rename for the same reason, at four
// times the system calls: a large node's restore writes a thousand IRQs).
func (p *ProcIRQ) WriteFile(np, value string) (string, error) {
	fd, err := p.openNode(np, unix.O_RDWR)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	crashpoint.Hit("write", p.root.Path(np))
	if p.kernel {
		err = writeOnce(fd, value)
	} else {
		err = writeInPlace(fd, value)
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

// writeOnce writes value to a kernel attribute in one write.
func writeOnce(fd int, value string) error {
	n, err := unix.Write(fd, []byte(value))
	if err == nil && n != len(value) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(value))
	}
	return err
}

// writeInPlace writes value over a fixture's plain file open as fd (see
// WriteFile); a file that is not a regular one is an error.
func writeInPlace(fd int, value string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	b := []byte(value)
	for int64(len(b)) < st.Size {
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
