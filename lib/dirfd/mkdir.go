package dirfd

import (
	"os"

	"golang.org/x/sys/unix"
)

// Mkdir says how MkdirAt makes and checks a directory.
type Mkdir struct {
	// Mode is the directory's mode, whatever the umask left.
	Mode uint32
	// Op, when set, names the crashpoint steps: Op+"-mkdir" before the
	// mkdir, Op+"-chmod" before a mode is set.
	Op string
	// Check, when set, says whether the directory (new or found) can be
	// used: its owner, its mode. Its error is MkdirAt's as it is.
	Check func(d *Dir, st *unix.Stat_t) error
	// Own takes the directory over for this process's user and group
	// (fchown) before its mode is set.
	Own bool
}

// MkdirAt makes the directory name in d unless it exists, opens it without
// following a symlink (*SymlinkError), checks it (m.Check) and gives it
// m.Mode (and, with m.Own, this process's user and group). The caller
// closes the directory returned.
func (d *Dir) MkdirAt(name string, m Mkdir) (*Dir, error) {
	var st *unix.Stat_t
	sub, err := d.Walk(name, Walk{Mkdir: true, Mode: m.Mode, Op: m.Op, Check: func(sub *Dir, s *unix.Stat_t, _ bool) error {
		st = s
		if m.Check != nil {
			return m.Check(sub, s)
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if err := sub.setOwnerMode(st, m); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// setOwnerMode gives the open directory (fstat st) m's mode and, with
// m.Own, this process's user and group, where it has others.
func (d *Dir) setOwnerMode(st *unix.Stat_t, m Mkdir) error {
	uid, gid := os.Geteuid(), os.Getegid()
	if m.Own && (int(st.Uid) != uid || int(st.Gid) != gid) {
		hitDir(m.Op, "-chown", d)
		if err := unix.Fchown(d.fd, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: d.path, Err: err}
		}
	}
	return d.SetMode(m.Mode, m.Op)
}

// SetMode gives the open directory mode (whatever the umask left) where it
// has another; op, when set, names the crashpoint step op+"-chmod" hit
// first.
func (d *Dir) SetMode(mode uint32, op string) error {
	st, err := d.Stat()
	if err != nil || st.Mode&0o7777 == mode {
		return err
	}
	hitDir(op, "-chmod", d)
	if err := unix.Fchmod(d.fd, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: d.path, Err: err}
	}
	return nil
}
