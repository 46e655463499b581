package mps

import (
	"errors"
	"io/fs"
	"path/filepath"

	"gpuprep/lib/dirfd"
)

// Removal never fails on what a user left in a daemon's directory, however
// deep, wide or linked it is: the directory is first renamed, in one step,
// into TrashName under the base (root's 0700: from then on no other user
// reaches anything in it, and the daemon's name is free for the next
// start), then emptied there flat, with O(1) descriptors at any depth
// (lib/dirfd: Trash, RemoveAll). Nothing is opened by a path.

// TrashName is the directory under the base where Remove moves a daemon's
// directory before emptying it. No user name starts with a dot (Dirs), so
// it is never a daemon's.
const TrashName = dirfd.TrashName

// Purged says how many entries of the trash Remove dealt with, and whether
// it left any there for the next call, with why (dirfd.Purged).
type Purged = dirfd.Purged

// Remove deletes p.Dir and everything in it: the path down to the base is
// walked as Create walks it (OpenBase), then RemoveIn. A base or p.Dir
// already gone is no error.
func Remove(p Paths) (Purged, error) {
	base, err := OpenBase(filepath.Dir(p.Dir), false)
	if errors.Is(err, fs.ErrNotExist) {
		return Purged{}, nil
	}
	if err != nil {
		return Purged{}, err
	}
	defer base.Close()
	return RemoveIn(base, p)
}

// RemoveIn deletes p.Dir, in the open base, and everything in it: it is
// renamed into the base's TrashName and the trash is emptied
// (dirfd.Dir.RemoveAll). A p.Dir already gone is no error. The error is
// only for a trash that cannot be trusted or a rename that fails: then
// p.Dir is still in place. What the purge could not finish is in Purged,
// for a warning: it is out of every user's reach and the next call goes on
// with it. Call it once the daemon is gone (Quit), as the epilog does.
func RemoveIn(base *dirfd.Dir, p Paths) (Purged, error) {
	if err := inBase(base, p); err != nil {
		return Purged{}, err
	}
	return base.RemoveAll(filepath.Base(p.Dir))
}
