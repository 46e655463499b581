package mps

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Removal never fails on what a user left in a daemon's directory, however
// deep, wide or linked it is: the directory is first renamed, in one step,
// into TrashName under the base (root's 0700: from then on no other user
// reaches anything in it, and the daemon's name is free for the next
// start), then emptied there flat: each directory met is taken over
// (root's 0700, so nobody adds to it any more) and its subdirectories are
// renamed up into the trash, so that at most two descriptors are open at
// any depth; files and symlinks are unlinked, never followed. Nothing is
// opened by a path: every call is relative to a descriptor of a directory
// already checked.

// TrashName is the directory under the base where Remove moves a daemon's
// directory before emptying it. No user name starts with a dot (Dirs), so
// it is never a daemon's.
const TrashName = ".trash"

// maxPurge bounds the entries one Remove deals with in the trash; what is
// left over (only what an older release gave away can hold that much) is
// deleted by the next Create or Remove.
const maxPurge = 1 << 20

// readBatch is how many names are read from a directory at a time.
const readBatch = 512

// Purged says how many entries of the trash Remove dealt with (deleted,
// or moved up to be deleted), and whether it left any there for the next
// call, with why (its budget spent, an entry it could not delete).
type Purged struct {
	Entries int
	Left    bool
	Err     error // why something was left; never a reason to fail
}

// Remove deletes p.Dir and everything in it: the path down to the base is
// walked as Create walks it, p.Dir is renamed into the base's TrashName,
// and the trash is emptied (purge). A p.Dir already gone is no error. The
// error is only for a base or trash that cannot be trusted or a rename
// that fails: then p.Dir is still in place. What the purge could not
// finish is in Purged, for a warning: it is out of every user's reach and
// the next call goes on with it. Call it once the daemon is gone (Quit),
// as the epilog does.
func Remove(p Paths) (Purged, error) {
	base, err := walk(filepath.Dir(p.Dir), false)
	if errors.Is(err, fs.ErrNotExist) {
		return Purged{}, nil
	}
	if err != nil {
		return Purged{}, err
	}
	defer unix.Close(base)
	return removeIn(base, p.Dir)
}

// removeIn moves full (a directory or anything else, in the open base) into
// the base's trash and empties the trash.
func removeIn(base int, full string) (Purged, error) {
	trash, trashPath, err := openTrash(base, filepath.Dir(full))
	if err != nil {
		return Purged{}, err
	}
	defer unix.Close(trash)
	if err := moveInto(base, filepath.Base(full), trash); err != nil && !errors.Is(err, unix.ENOENT) {
		return Purged{}, &os.PathError{Op: "rename into " + trashPath, Path: full, Err: err}
	}
	return emptyTrash(base, trash, trashPath), nil
}

// emptyTrash purges the trash (open, path full) and, once it is empty,
// removes it from base. The hooks hold the node lock, so no other run
// uses it meanwhile.
func emptyTrash(base, trash int, full string) Purged {
	pg := purge(trash, full, maxPurge)
	if !pg.Left {
		unix.Unlinkat(base, TrashName, unix.AT_REMOVEDIR) // not empty after all: the next run's
	}
	return pg
}

// openTrash opens (making it) the trash of the open base (path
// basePath): root's 0700, never a symlink.
func openTrash(base int, basePath string) (int, string, error) {
	full := filepath.Join(basePath, TrashName)
	trash, err := subdir(base, full, 0o700)
	if err != nil {
		return -1, "", err
	}
	if err := trust(trash, full, false); err != nil {
		unix.Close(trash)
		return -1, "", err
	}
	if err := rootOnly(trash, full, 0o700); err != nil {
		unix.Close(trash)
		return -1, "", err
	}
	return trash, full, nil
}

// moveInto renames name (in dir) into trash under a new name of its own.
func moveInto(dir int, name string, trash int) error {
	for {
		to := trashEntry()
		err := unix.Renameat2(dir, name, trash, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) { // a file system without the flag: names are random
			err = unix.Renameat(dir, name, trash, to)
		}
		if !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
}

// trashEntry is a fresh name for an entry of the trash.
func trashEntry() string { return "t" + strconv.FormatUint(rand.Uint64(), 36) }

// purge deletes what the trash (open, path full) holds, up to budget
// entries.
func purge(trash int, full string, budget int) Purged {
	var pg Purged
	for pg.Entries < budget {
		names, err := readNames(trash, readBatch)
		if err != nil {
			pg.Left, pg.Err = true, fmt.Errorf("read %s: %w", full, err)
			return pg
		}
		if len(names) == 0 {
			return pg
		}
		for _, n := range names {
			done, err := purgeEntry(trash, n)
			pg.Entries += done
			if err != nil {
				pg.Left, pg.Err = true, fmt.Errorf("%s/%s: %w", full, n, err)
				return pg
			}
		}
	}
	pg.Left = true
	pg.Err = fmt.Errorf("%s: more than %d entries; the rest is deleted at the next start or stop of an MPS daemon", full, budget)
	return pg
}

// purgeEntry deletes name (in trash): a file or symlink is unlinked, an
// empty directory removed, a full one flattened (its subdirectories moved
// up into the trash, for later passes). It returns how many entries went.
func purgeEntry(trash int, name string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(trash, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, ignoreGone(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 1, ignoreGone(unix.Unlinkat(trash, name, 0))
	}
	err := unix.Unlinkat(trash, name, unix.AT_REMOVEDIR)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return 1, nil
	}
	if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return 0, err
	}
	return flatten(trash, name)
}

// flatten takes the directory name (in trash) over as root's 0700, so no
// other user adds to it from now on, and empties it: files and symlinks
// are unlinked, directories renamed into the trash. The directory itself
// goes at the purge's next pass.
func flatten(trash int, name string) (int, error) {
	fd, err := unix.Openat(trash, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, ignoreGone(err)
	}
	defer unix.Close(fd)
	if err := rootOnly(fd, name, 0o700); err != nil {
		return 0, err
	}
	done := 0
	for {
		names, err := readNames(fd, readBatch)
		if err != nil || len(names) == 0 {
			return done, err
		}
		for _, n := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err = ignoreGone(err); err != nil {
					return done, err
				}
				continue
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				err = moveInto(fd, n, trash)
			} else {
				err = unix.Unlinkat(fd, n, 0)
			}
			done++
			if err = ignoreGone(err); err != nil {
				return done, err
			}
		}
	}
}

// readNames reads up to n names of the open directory dir, from its start
// (through a descriptor of its own, so reads never share an offset).
func readNames(dir, n int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, err := f.Readdirnames(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// ignoreGone is err, but nil for an entry that is gone already.
func ignoreGone(err error) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
