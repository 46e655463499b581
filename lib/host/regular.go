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
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, fi, err
	}
	defer f.Close()
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

// ReadHead reads at most max bytes from the start of the regular file path
// (a path on this machine), whatever its size: a file a user names, of
// which only the start matters. Like ReadRegular it opens without blocking
// and refuses what is not a regular file (ErrNotRegular, with fi); a file
// shorter than its size said (being written) is no error.
func ReadHead(path string, max int) (data []byte, fi fs.FileInfo, err error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, fi, err
	}
	defer f.Close()
	data = make([]byte, min(int64(max), fi.Size()+1))
	n, err := io.ReadFull(f, data)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return data[:n], fi, err
}

// openRegular opens path without blocking (a FIFO never makes it wait)
// and checks with fstat that it is a regular file: a FIFO swapped in
// after a stat cannot hang the caller. fi is the opened file's.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	return f, fi, nil
}
