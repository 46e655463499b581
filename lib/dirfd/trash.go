package dirfd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Removal never fails on what a user left in a directory, however deep,
// wide or linked it is: the directory is first renamed, in one step, into
// a trash beside it (this process's, 0700: from then on no other user
// reaches anything in it, and its name is free at once), then emptied
// there flat (purge.go). Nothing is opened by a path.

// TrashName is the trash RemoveAll uses, in the directory of what it
// deletes. The hooks hold the node lock, so no other run uses it
// meanwhile.
const TrashName = ".trash"

// Trash is a directory where what is to be deleted is moved in one rename
// and then emptied.
type Trash struct {
	dir    *Dir // the trash
	parent *Dir // where it is, a descriptor of its own
	name   string
}

// OpenTrash opens the trash name in d, making it: it must be a directory
// (never a symlink) of root or this process's user that nobody else may
// write, and is taken over as this process's, 0700.
func (d *Dir) OpenTrash(name string) (*Trash, error) {
	parent, err := d.Reopen()
	if err != nil {
		return nil, err
	}
	dir, err := d.MkdirAt(name, Mkdir{Mode: 0o700, Own: true, Check: ownedByUs})
	if err != nil {
		parent.Close()
		return nil, err
	}
	return &Trash{dir: dir, parent: parent, name: name}, nil
}

// ownedByUs refuses a directory another user than root or this process's
// owns, or that others may write.
func ownedByUs(d *Dir, st *unix.Stat_t) error {
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("refusing %s: owned by uid %d, not root", d.path, st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("refusing %s: writable by others (mode %#o)", d.path, st.Mode&0o7777)
	}
	return nil
}

// Path is the trash's path, for messages.
func (t *Trash) Path() string { return t.dir.path }

// Dir is the trash itself.
func (t *Trash) Dir() *Dir { return t.dir }

// Close releases the trash's descriptors.
func (t *Trash) Close() {
	t.dir.Close()
	t.parent.Close()
}

// Take renames name (in from) into the trash under a fresh name of its
// own. A name that is not there is an error wrapping fs.ErrNotExist.
func (t *Trash) Take(from *Dir, name string) error {
	if err := moveInto(from.fd, name, t.dir.fd); err != nil {
		return &os.PathError{Op: "rename into " + t.dir.path, Path: from.Join(name), Err: err}
	}
	return nil
}

// Empty deletes what the trash holds, up to budget entries (at most
// MaxPurge when budget is 0 or more), and removes the trash once it is
// empty. What it leaves, the next Empty goes on with.
func (t *Trash) Empty(budget int) Purged {
	if budget <= 0 || budget > MaxPurge {
		budget = MaxPurge
	}
	pg := purge(t.dir, budget)
	if !pg.Left {
		unix.Unlinkat(t.parent.fd, t.name, unix.AT_REMOVEDIR) // not empty after all: the next run's
	}
	return pg
}

// RemoveAll deletes name in d and everything in it, whatever it is (a
// file, a symlink itself, a tree of any depth): it is renamed into d's
// TrashName and the trash is emptied. A name already gone is no error.
// The error is only for a trash that cannot be trusted or a rename that
// fails: then name is still in place. What the purge could not finish is
// in Purged, for a warning: it is out of every other user's reach, and the
// next RemoveAll in d goes on with it.
func (d *Dir) RemoveAll(name string) (Purged, error) {
	t, err := d.OpenTrash(TrashName)
	if err != nil {
		return Purged{}, err
	}
	defer t.Close()
	if err := t.Take(d, name); err != nil && !errors.Is(err, unix.ENOENT) {
		return Purged{}, err
	}
	return t.Empty(0), nil
}

// moveInto renames name (in dir) into trash under a new name of its own.
func moveInto(dir int, name string, trash int) error {
	for {
		to := "t" + strconv.FormatUint(rand.Uint64(), 36)
		err := unix.Renameat2(dir, name, trash, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) { // a file system without the flag: names are random
			err = unix.Renameat(dir, name, trash, to)
		}
		if !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
}
