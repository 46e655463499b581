package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned by ReadRegular for a directory, FIFO, socket or
// device.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is returned by ReadRegular for a file over its limit.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Max) }

// ReadRegular reads a file an admin names (a configuration, a gres.conf):
// path is a path on this machine, not a node path. It refuses what is not a
// regular file (ErrNotRegular: a FIFO would block, /dev/zero never ends) and
// a file over max bytes (*TooLargeError), reading at most max+1 bytes. The
// file is opened without blocking and checked with fstat, so a FIFO swapped
// in after a stat cannot hang the caller; fi is the opened file's.
func ReadRegular(path string, max int64) (data []byte, fi fs.FileInfo, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	if fi.Size() > max {
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max {
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	return data, fi, nil
}
