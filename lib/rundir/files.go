package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// at opens the directory of name (the part before its last "/"; none: the
// run directory itself) for the writer, and returns it with name's last
// part; the caller closes it. In a read-only view of a missing run
// directory it is an error wrapping fs.ErrNotExist.
func (d *Dir) at(name string) (*dirfd.Dir, string, error) {
	if d.dir == nil {
		return nil, "", &os.PathError{Op: "open", Path: d.path, Err: fs.ErrNotExist}
	}
	dir, file := split(name)
	sub, err := d.dir.Walk(dir, dirfd.Walk{Check: walkerCheck})
	return sub, file, err
}

// writable refuses a change (op on name) through a read-only view.
func (d *Dir) writable(op, name string) error {
	if d.readOnly {
		return fmt.Errorf("%s %s/%s: the run directory is open read-only (dry run)", op, d.path, name)
	}
	return nil
}

// ReadTrusted reads the file name (relative to the run directory): opened
// without following a symlink (a *dirfd.SymlinkError), it must be a
// regular file (dirfd.ErrNotRegular) of the writer's that nobody else can
// write (an *UntrustedError), in directories that are too, and hold at
// most max bytes (dirfd.ErrTooLarge). A missing file or directory is an
// error wrapping fs.ErrNotExist.
func (d *Dir) ReadTrusted(name string, max int64) ([]byte, error) {
	sub, file, err := d.at(name)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	return sub.ReadFile(file, dirfd.Read{Max: max, Check: func(st *unix.Stat_t) error { return fileCheck(sub, file, st) }})
}

// WriteAtomic replaces the file name (relative to the run directory; its
// directory must exist) with data, mode mode, atomically
// (dirfd.WriteAtomic): a symlink or anything but a regular file in its
// place is refused.
func (d *Dir) WriteAtomic(name string, data []byte, mode uint32) error {
	if err := d.writable("write", name); err != nil {
		return err
	}
	sub, file, err := d.at(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	return sub.WriteAtomic(file, data, dirfd.Write{Mode: mode, Op: "run", Regular: true})
}

// Remove removes the file name (relative to the run directory; a symlink
// itself, never its target). A missing file or directory is no error.
func (d *Dir) Remove(name string) error {
	if err := d.writable("remove", name); err != nil {
		return err
	}
	sub, file, err := d.at(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer sub.Close()
	crashpoint.HitAt("run-unlink", sub.Path(), file)
	return sub.Unlink(file)
}

// Lstat is the fstatat of name (relative to the run directory), not
// following a symlink.
func (d *Dir) Lstat(name string) (*unix.Stat_t, error) {
	sub, file, err := d.at(name)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	return sub.Lstat(file)
}

// OpenDir opens the directory name (relative to the run directory) for
// reading: never through a symlink, the writer's and writable by it
// alone. A missing one is an error wrapping fs.ErrNotExist. The caller
// closes it.
func (d *Dir) OpenDir(name string) (*dirfd.Dir, error) {
	if d.dir == nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: fs.ErrNotExist}
	}
	return d.dir.Walk(name, dirfd.Walk{Check: walkerCheck})
}

// MkdirAt opens the directory name (relative to the run directory) for
// the writer, mode mode: made when missing, given mode when it has
// another; one that another user owns or others can write is moved aside
// and made afresh, as Open treats the run directory (Options.Held). The
// caller closes it.
func (d *Dir) MkdirAt(name string, mode uint32) (*dirfd.Dir, error) {
	if err := d.writable("mkdir", name); err != nil {
		return nil, err
	}
	parent, file, err := d.at(name)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	sub, _, err := d.openSub(parent, file, mode)
	if err == nil {
		if err = sub.SetMode(mode, "run"); err != nil {
			sub.Close()
		}
	}
	return sub, err
}

// RemoveAll removes name (relative to the run directory) and everything
// in it, whatever its depth, never following a symlink
// (dirfd.Dir.RemoveAll: moved into the trash of its directory and emptied
// flat). A name already gone is no error.
func (d *Dir) RemoveAll(name string) (dirfd.Purged, error) {
	if err := d.writable("remove", name); err != nil {
		return dirfd.Purged{}, err
	}
	sub, file, err := d.at(name)
	if err != nil {
		return dirfd.Purged{}, err
	}
	defer sub.Close()
	return sub.RemoveAll(file)
}
