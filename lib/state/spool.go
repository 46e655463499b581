// Package state is gpuprep's spool directory (default /var/lib/gpuprep):
// small JSON files written atomically, append-only JSON-lines files, and the
// node lock. The prolog and epilog run as root on every node, so the spool
// refuses to be a symlink or writable by anyone but its owner, never follows
// symlinks inside it, and a file is either its old or its new content, never
// half of each.
package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// LockName is the lock file inside the spool; it is reserved: no data file
// may have this name.
const LockName = "lock"

// Spool is an open spool directory. Every file operation is relative to the
// directory descriptor taken at Open, so renaming or swapping the directory
// (or any folder above it) afterwards cannot redirect a write.
type Spool struct {
	dir      string
	fd       int  // -1: a read-only spool whose directory does not exist
	readOnly bool // OpenReadOnly: every write fails
	once     sync.Once
}

// Open opens the spool at dir, creating it (mode 0700, missing parents 0755)
// when absent. It refuses, naming the path: a dir that is a symlink or not a
// directory; a dir not owned by the effective uid (root when run as root);
// a dir writable by group or others; and any folder above it that someone
// other than root or the effective uid could rename it out of: one owned by
// another user, or writable by group or others without the sticky bit
// (/tmp, 1777, is fine: nobody else can rename our entry there).
func Open(dir string) (*Spool, error) { return open(dir, false) }

// OpenReadOnly opens the spool at dir for reading only, for a dry run or a
// report: it creates nothing, and every write through it (WriteJSON,
// AppendLine(s), Remove, Rename, Sweep, Lock) fails naming the file. A dir
// that does not exist is an empty spool. A dir that exists gets Open's
// checks.
func OpenReadOnly(dir string) (*Spool, error) { return open(dir, true) }

func open(dir string, readOnly bool) (*Spool, error) {
	if dir == "" {
		return nil, errors.New("state dir: empty path")
	}
	dir = filepath.Clean(dir)
	if readOnly {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return &Spool{dir: dir, fd: -1, readOnly: true}, nil
		}
	} else if err := create(dir); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("state dir %s is a symlink; refusing (point --state-dir at the real directory)", dir)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("state dir %s is a symlink; refusing", dir)
		}
		return nil, fmt.Errorf("state dir %s: open: %w", dir, err)
	}
	if err := checkDir(fd, dir); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := checkAncestors(fd, dir); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Spool{dir: dir, fd: fd, readOnly: readOnly}, nil
}

// create makes dir (0700) and its missing parents (0755, less the umask).
func create(dir string) error {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil // exists (checked next) or an error the Lstat after reports
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("state dir %s: create parent: %w", dir, err)
	}
	crashpoint.Hit("spool-mkdir", dir)
	if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("state dir %s: create: %w", dir, err)
	}
	return nil
}

// checkDir checks the opened spool itself: owner and mode.
func checkDir(fd int, dir string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("state dir %s: stat: %w", dir, err)
	}
	if euid := uint32(os.Geteuid()); st.Uid != euid {
		return fmt.Errorf("state dir %s is owned by uid %d, not uid %d; refusing (chown it or use another --state-dir)", dir, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("state dir %s is writable by group or others (mode %04o); refusing (chmod 0700 it)", dir, st.Mode&0o7777)
	}
	return nil
}

// checkAncestors walks ".." from the opened directory up to the root of the
// file system tree, so it checks the folders that really contain the spool,
// whatever symlinks the path went through.
func checkAncestors(fd int, dir string) error {
	euid := uint32(os.Geteuid())
	var cur unix.Stat_t
	if err := unix.Fstat(fd, &cur); err != nil {
		return fmt.Errorf("state dir %s: stat: %w", dir, err)
	}
	at, up := fd, ".."
	for depth := 0; depth < 256; depth++ {
		pfd, err := unix.Openat(at, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if at != fd {
			unix.Close(at)
		}
		if err != nil {
			return fmt.Errorf("state dir %s: open %s: %w", dir, up, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			unix.Close(pfd)
			return fmt.Errorf("state dir %s: stat %s: %w", dir, up, err)
		}
		if st.Dev == cur.Dev && st.Ino == cur.Ino { // "/" is its own parent
			unix.Close(pfd)
			return nil
		}
		name := ancestorName(dir, depth)
		if st.Uid != 0 && st.Uid != euid {
			unix.Close(pfd)
			return fmt.Errorf("state dir %s: folder above it, %s, is owned by uid %d, who could replace the spool; refusing", dir, name, st.Uid)
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			unix.Close(pfd)
			return fmt.Errorf("state dir %s: folder above it, %s, is writable by group or others without the sticky bit (mode %04o), so the spool could be replaced; refusing", dir, name, st.Mode&0o7777)
		}
		at, cur, up = pfd, st, up+"/.."
	}
	unix.Close(at)
	return fmt.Errorf("state dir %s: too many folders above it", dir)
}

// ancestorName is the depth-th folder above dir, for messages.
func ancestorName(dir string, depth int) string {
	p := dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		p = real
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	for i := 0; i <= depth; i++ {
		p = filepath.Dir(p)
	}
	return p
}

// Dir is the spool's path as given to Open (cleaned).
func (s *Spool) Dir() string { return s.dir }

// Close releases the directory descriptor. Later calls do nothing.
func (s *Spool) Close() error {
	var err error
	s.once.Do(func() {
		if s.fd >= 0 {
			err = unix.Close(s.fd)
		}
	})
	return err
}

// ReadOnly says whether the spool was opened with OpenReadOnly.
func (s *Spool) ReadOnly() bool { return s.readOnly }

// writable refuses a write (op on name) to a read-only spool.
func (s *Spool) writable(op, name string) error {
	if s.readOnly {
		return fmt.Errorf("%s %s: the spool is open read-only (dry run or report)", op, s.path(name))
	}
	return nil
}

// path names a file in the spool for messages.
func (s *Spool) path(name string) string { return filepath.Join(s.dir, name) }

// checkName refuses names that could leave the spool or collide with its
// own files: empty, containing "/" or "..", NUL or a newline, starting with
// "." (temporary files), or the lock file.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("state: empty file name")
	case strings.ContainsAny(name, "/\x00\n"), strings.Contains(name, ".."):
		return fmt.Errorf("state: file name %q must be a plain name (no \"/\" or \"..\")", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("state: file name %q must not start with \".\" (reserved for temporary files)", name)
	case name == LockName:
		return fmt.Errorf("state: file name %q is reserved for the spool lock", name)
	}
	return nil
}
