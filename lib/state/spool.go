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
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// LockName is the lock file inside the spool; it is reserved: no data file
// may have this name.
const LockName = "lock"

// Spool is an open spool directory. Every file operation is relative to the
// directory descriptor taken at Open, so renaming or swapping the directory
// (or any folder above it) afterwards cannot redirect a write.
type Spool struct {
	dir      string
	d        *dirfd.Dir // nil: a read-only spool whose directory does not exist
	fd       int        // d's descriptor; -1 without d
	readOnly bool       // OpenReadOnly: every write fails
	found    int        // the format found at Open (format.go)
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
	parent, err := openParent(dir, !readOnly)
	if readOnly && errors.Is(err, fs.ErrNotExist) {
		return &Spool{dir: dir, fd: -1, readOnly: true, found: Format}, nil
	}
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	d, made, err := openSpoolDir(parent, dir, readOnly)
	if readOnly && errors.Is(err, fs.ErrNotExist) {
		return &Spool{dir: dir, fd: -1, readOnly: true, found: Format}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Spool{dir: dir, d: d.Named(dir), fd: d.FD(), readOnly: readOnly}
	if err := s.format(made); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openParent opens the folder dir is in, from / down without following a
// symlink (dirfd.WalkPath), after resolving the symlinks on its path as
// far as it exists (an admin's /var -> /data/var), so that the folders
// checked are the ones that really contain the spool: each must be root's
// or the effective uid's, and not writable by group or others without the
// sticky bit (/tmp, 1777, is fine: nobody else can rename our entry
// there). With create, missing folders are made 0755 (less the umask).
func openParent(dir string, create bool) (*dirfd.Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	d, err := dirfd.WalkPath(realPath(filepath.Dir(abs)), dirfd.Walk{Mkdir: create, Mode: 0o755, Check: func(d *dirfd.Dir, st *unix.Stat_t, _ bool) error {
		return checkAbove(dir, d.Path(), st)
	}})
	if err != nil && !strings.HasPrefix(err.Error(), "state dir ") {
		err = fmt.Errorf("state dir %s: %w", dir, err)
	}
	return d, err
}

// realPath is p with every symlink on it resolved, as far as it exists;
// the missing rest is appended as it is.
func realPath(p string) string {
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if p == "/" || p == "." {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = filepath.Dir(p)
	}
}

// checkAbove checks a folder above the spool dir (path name, fstat st):
// someone other than root or the effective uid could rename the spool out
// of it when they own it, or when group or others may write it without the
// sticky bit.
func checkAbove(dir, name string, st *unix.Stat_t) error {
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("state dir %s: folder above it, %s, is owned by uid %d, who could replace the spool; refusing", dir, name, st.Uid)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("state dir %s: folder above it, %s, is writable by group or others without the sticky bit (mode %04o), so the spool could be replaced; refusing", dir, name, st.Mode&0o7777)
	}
	return nil
}

// openSpoolDir opens the spool dir in parent, making it (0700) unless
// readOnly; made says it was made now. A symlink, a directory of another
// user or one group or others can write is refused, naming dir.
func openSpoolDir(parent *dirfd.Dir, dir string, readOnly bool) (*dirfd.Dir, bool, error) {
	name := filepath.Base(dir)
	_, err := parent.Lstat(name)
	made := !readOnly && errors.Is(err, fs.ErrNotExist)
	d, err := parent.Walk(name, dirfd.Walk{Mkdir: made, Mode: 0o700, Op: "spool"})
	switch {
	case errors.Is(err, dirfd.ErrSymlink):
		return nil, false, fmt.Errorf("state dir %s is a symlink; refusing (point --state-dir at the real directory)", dir)
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, err
	case err != nil:
		return nil, false, fmt.Errorf("state dir %s: open: %w", dir, err)
	}
	if err := checkDir(d.FD(), dir); err != nil {
		d.Close()
		return nil, false, err
	}
	return d, made, nil
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

// Dir is the spool's path as given to Open (cleaned).
func (s *Spool) Dir() string { return s.dir }

// Close releases the directory descriptor. Later calls do nothing.
func (s *Spool) Close() error {
	var err error
	s.once.Do(func() {
		if s.d != nil {
			err = s.d.Close()
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
// "." (temporary files), the lock file or the format file.
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
	case name == FormatName:
		return fmt.Errorf("state: file name %q is reserved for the spool's format version", name)
	}
	return nil
}

// AllowTraverse lets every user pass through the spool directory (mode
// 0711, from 0700) to the job evidence under it (<state_dir>/jobs, whose
// records their jobs' users read). Nothing else opens up: the spool's
// own files are 0600 and its names cannot be listed.
func (s *Spool) AllowTraverse() error {
	if err := s.writable("chmod", "."); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(s.d.FD(), &st); err != nil {
		return fmt.Errorf("state dir %s: stat: %w", s.dir, err)
	}
	if st.Mode&0o111 == 0o111 {
		return nil
	}
	if err := unix.Fchmod(s.d.FD(), (st.Mode&0o7777)|0o111); err != nil {
		return fmt.Errorf("state dir %s: chmod o+x: %w", s.dir, err)
	}
	return nil
}
