// Package host gives rooted access to a node's kernel files: /sys, /proc, /dev
// and cgroupfs. Every path a gpuprep library reads or writes goes through a
// Root, so the same code runs on the real node (root "/") and on a fixture tree
// unpacked in a test (root "/tmp/x").
package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Root is a directory that stands for "/" of a node.
type Root struct {
	dir string
}

// NewRoot returns a Root at dir. An empty dir means "/".
func NewRoot(dir string) Root {
	if dir == "" {
		dir = "/"
	}
	return Root{dir: filepath.Clean(dir)}
}

// Dir is the directory standing for "/".
func (r Root) Dir() string {
	if r.dir == "" {
		return "/"
	}
	return r.dir
}

// IsHost says whether the root is the real "/".
func (r Root) IsHost() bool { return r.Dir() == "/" }

// Path turns a node path ("/sys/bus/pci/devices") into a path on this machine.
func (r Root) Path(p string) string {
	return filepath.Join(r.Dir(), path.Clean("/"+p))
}

// Rel turns a path on this machine back into a node path, if it lies under the
// root.
func (r Root) Rel(p string) (string, bool) {
	rel, err := filepath.Rel(r.Dir(), p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return "/" + filepath.ToSlash(rel), true
}

// maxKernelFile bounds a single read of a kernel file: sysfs attributes are at
// most a page, procfs files we read are a few KiB.
const maxKernelFile = 4 << 20

// ReadFile reads a whole kernel file. sysfs and procfs may return short reads
// or EAGAIN/EINTR; both are retried a few times.
//
// It uses plain open/read/close system calls rather than os.File: a node
// read touches hundreds of small sysfs files, and os.File's poller
// registration costs more than the read itself.
func (r Root) ReadFile(p string) ([]byte, error) {
	full := r.Path(p)
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	b, err := readAll(fdReader(fd))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

// fdReader reads a raw file descriptor.
type fdReader int

func (f fdReader) Read(b []byte) (int, error) {
	n, err := unix.Read(int(f), b)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readAll reads until EOF, accepting short reads and retrying EAGAIN and
// EINTR up to five times in a row; it stops at maxKernelFile bytes. It
// reads into the buffer's spare room, which doubles as the file grows: a
// sysfs attribute takes one read of 4 KiB, a 2.8 MB /proc/interrupts
// about twenty reads rather than seven hundred.
func readAll(f io.Reader) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	retries := 0
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxKernelFile {
			return nil, fmt.Errorf("larger than %d bytes", maxKernelFile)
		}
		switch {
		case err == io.EOF:
			return buf, nil
		case err == nil:
			retries = 0
		case (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR)) && retries < 5:
			retries++
			time.Sleep(time.Millisecond)
		default:
			return buf, err
		}
	}
}

// ReadString reads a kernel file and trims surrounding white space and NUL
// bytes (some arm64 kernels end list files in "\n\x00").
func (r Root) ReadString(p string) (string, error) {
	b, err := r.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// ReadInt reads a kernel file holding one decimal integer ("-1\n" included).
func (r Root) ReadInt(p string) (int, error) {
	s, err := r.ReadString(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: want an integer, found %q", p, clip(s))
	}
	return v, nil
}

// ReadHex reads a kernel file holding one hexadecimal number ("0x030200").
func (r Root) ReadHex(p string) (uint64, error) {
	s, err := r.ReadString(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: want a hex number, found %q", p, clip(s))
	}
	return v, nil
}

// Exists says whether a node path exists (following symlinks). Any error
// reads as "no": where an unreadable path must not count as gone (a job's
// cgroup, a process), use ExistsErr.
func (r Root) Exists(p string) bool {
	_, err := os.Stat(r.Path(p))
	return err == nil
}

// ExistsErr says whether a node path exists (following symlinks), telling
// "does not exist" (false, nil) from every other error (false, err): a
// permission denied, an I/O error or a path component that is not a folder
// say nothing about whether it exists.
func (r Root) ExistsErr(p string) (bool, error) {
	_, err := os.Stat(r.Path(p))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// ReadDir lists the names in a node directory, sorted.
func (r Root) ReadDir(p string) ([]string, error) {
	ents, err := os.ReadDir(r.Path(p))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// Glob matches a pattern of node paths and returns node paths, sorted.
func (r Root) Glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(r.Path(pattern))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for _, p := range m {
		if np, ok := r.Rel(p); ok {
			out = append(out, np)
		}
	}
	return out, nil
}

// LinkTarget is the target of the symbolic link at node path p, as the
// link holds it (one readlink; the folders on the way are the kernel's to
// follow, as for a read): where only the target's last names matter (a
// device's driver, an HCA's PCI function), not where it leads in the root.
func (r Root) LinkTarget(p string) (string, error) {
	return os.Readlink(r.Path(p))
}

// Resolve follows the symlinks of a node path inside the root and returns the
// node path it ends at (e.g. /sys/class/net/eth0/device ->
// /sys/devices/pci0000:00/0000:00:03.0). Absolute link targets are taken as
// node paths, so fixture trees may hold either kind of link.
func (r Root) Resolve(p string) (string, error) {
	cur := path.Clean("/" + p)
	for hops := 0; hops < 40; hops++ {
		// Find the first component of cur that is a symlink.
		parts := strings.Split(strings.TrimPrefix(cur, "/"), "/")
		done := true
		for i := range parts {
			prefix := "/" + strings.Join(parts[:i+1], "/")
			fi, err := os.Lstat(r.Path(prefix))
			if err != nil {
				return "", err
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := os.Readlink(r.Path(prefix))
			if err != nil {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(prefix), target)
			} else if rel, ok := r.Rel(target); ok && !r.IsHost() {
				// A link captured with an absolute host path into the root.
				target = rel
			}
			cur = path.Clean(target + "/" + strings.Join(parts[i+1:], "/"))
			done = false
			break
		}
		if done {
			return cur, nil
		}
	}
	return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
}

// clip is s cut to 40 bytes with "..." after a cut, for a message. It is
// lib/textfmt's Clip(s, 40), kept here so that host, a leaf package, imports
// no more of gpuprep.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
