package dirfd

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Walk says how Dir.Walk treats each directory on its way.
type Walk struct {
	// Mkdir makes each directory before it is opened, mode Mode (less
	// the umask: Check, or the caller, sets the mode it wants); one that
	// exists is kept. Op, when set, names the crashpoint step hit before
	// each mkdir: Op+"-mkdir" ("run", "spool").
	Mkdir bool
	Mode  uint32
	Op    string
	// Check, when set, is called on each directory opened (last: the
	// last of the path) with its fstat; an error stops the walk and is
	// Walk's error as it is.
	Check func(d *Dir, st *unix.Stat_t, last bool) error
}

// Walk opens rel, a relative path below d, component by component, each
// with openat O_NOFOLLOW from its parent's descriptor, and returns the
// last one (the caller closes it; d stays open). A symlink on the way is a
// *SymlinkError naming it; a missing directory (without Mkdir) an error
// wrapping fs.ErrNotExist. "" or "." opens d again.
func (d *Dir) Walk(rel string, w Walk) (*Dir, error) {
	parts, err := components(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	if len(parts) == 0 {
		return d.Reopen()
	}
	at := d
	for i, name := range parts {
		next, err := at.step(name, w, i == len(parts)-1)
		if at != d {
			at.Close()
		}
		if err != nil {
			return nil, err
		}
		at = next
	}
	return at, nil
}

// WalkPath is Walk from "/" down the absolute, clean path p; Check is
// called on "/" too.
func WalkPath(p string, w Walk) (*Dir, error) {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return nil, fmt.Errorf("%q: want a clean absolute path", p)
	}
	root, err := Open("/")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if w.Check != nil {
		st, err := root.Stat()
		if err != nil {
			return nil, err
		}
		if err := w.Check(root, st, p == "/"); err != nil {
			return nil, err
		}
	}
	return root.Walk(strings.TrimPrefix(p, "/"), w)
}

// step makes (with Mkdir), opens and checks the directory name in d.
func (d *Dir) step(name string, w Walk, last bool) (*Dir, error) {
	if w.Mkdir {
		hit(w.Op, "-mkdir", d, name)
		if err := unix.Mkdirat(d.fd, name, w.Mode); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
		}
	}
	sub, err := d.OpenDir(name)
	if err != nil || w.Check == nil {
		return sub, err
	}
	st, err := sub.Stat()
	if err == nil {
		err = w.Check(sub, st, last)
	}
	if err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// components splits a relative path; "..", an absolute path or an empty
// component is refused.
func components(rel string) ([]string, error) {
	if rel == "" || rel == "." {
		return nil, nil
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts {
		if err := plainName(c); err != nil {
			return nil, fmt.Errorf("path %q: %w", rel, err)
		}
	}
	return parts, nil
}
