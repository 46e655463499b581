package dirfd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A trash is emptied flat: each directory met is taken over (this
// process's, 0700, so nobody adds to it any more) and its subdirectories
// are renamed up into the trash, so that at most three descriptors are
// open at any depth; files and symlinks are unlinked, never followed.

// MaxPurge bounds the entries one Empty deals with; what is left over
// (only a tree someone planted holds that much) is deleted by the next.
const MaxPurge = 1 << 20

// readBatch is how many names are read from a directory at a time.
const readBatch = 512

// Purged says how many entries of the trash an Empty dealt with (deleted,
// or moved up to be deleted), and whether it left any there for the next
// one, with why (its budget spent, an entry it could not delete).
type Purged struct {
	Entries int
	Left    bool
	Err     error // why something was left; never a reason to fail
}

// purge deletes what the trash holds, up to budget entries.
func purge(trash *Dir, budget int) Purged {
	var pg Purged
	for pg.Entries < budget {
		names, err := readNames(trash.fd, readBatch)
		if err != nil {
			pg.Left, pg.Err = true, fmt.Errorf("read %s: %w", trash.path, err)
			return pg
		}
		if len(names) == 0 {
			return pg
		}
		for _, n := range names {
			done, err := purgeEntry(trash.fd, n)
			pg.Entries += done
			if err != nil {
				pg.Left, pg.Err = true, fmt.Errorf("%s: %w", trash.Join(n), err)
				return pg
			}
		}
	}
	pg.Left = true
	pg.Err = fmt.Errorf("%s: more than %d entries; the rest is deleted at the next removal there", trash.path, budget)
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

// flatten takes the directory name (in trash) over as this process's,
// 0700, so no other user adds to it from now on, and empties it: files and
// symlinks are unlinked, directories renamed into the trash. The directory
// itself goes at the purge's next pass.
func flatten(trash int, name string) (int, error) {
	fd, err := unix.Openat(trash, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, ignoreGone(err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
		return 0, fmt.Errorf("chown: %w", err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return 0, fmt.Errorf("chmod: %w", err)
	}
	done := 0
	for {
		names, err := readNames(fd, readBatch)
		if err != nil || len(names) == 0 {
			return done, err
		}
		for _, n := range names {
			if err := flattenEntry(fd, n, trash); err != nil {
				return done, err
			}
			done++
		}
	}
}

// flattenEntry unlinks name (in dir), or moves it into the trash when it
// is a directory.
func flattenEntry(dir int, name string, trash int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ignoreGone(err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return ignoreGone(moveInto(dir, name, trash))
	}
	return ignoreGone(unix.Unlinkat(dir, name, 0))
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

// Names lists every entry of d (through a descriptor of its own).
func (d *Dir) Names() ([]string, error) {
	names, err := readNames(d.fd, -1)
	if err != nil {
		return nil, &os.PathError{Op: "list", Path: d.path, Err: err}
	}
	return names, nil
}
