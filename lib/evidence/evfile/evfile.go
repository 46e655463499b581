// Package evfile is where a job's evidence records (evidence.Record) live:
// one file per run of a job, in the spool's jobs directory,
//
//	<state_dir>/                 the spool (lib/state): root's 0711
//	                             (state.Spool.AllowTraverse)
//	<state_dir>/jobs/            root:root 0755: users list the names
//	<state_dir>/jobs/<id>-<start>.json
//	                             root:root 0640 plus the POSIX ACL entry
//	                             user:<job's uid>:r--, so the job's user
//	                             (besides root and group root) reads it
//
// <start> is the job's start (the prolog's time) in UTC as
// 20060102T150405Z: a requeued job keeps its id, so the start tells its
// runs apart. Root opens the directory with Open (made, checked, by its
// descriptor: lib/dirfd), a user with OpenReader (makes nothing, changes
// nothing). Every file is opened, written, renamed and removed relative to
// the directory's descriptor, never through a symlink.
package evfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/state"
)

// Sub is the records' directory in the spool.
const Sub = "jobs"

// Modes of the records' directory and of a record.
const (
	DirMode  = 0o755
	FileMode = 0o640
)

// maxRecord bounds a record read: a node's record is some tens of KiB.
const maxRecord = 16 << 20

// ErrNewer is wrapped by the refusal of a record of a newer format.
var ErrNewer = dirfd.ErrNewer

// Dir is the records' directory, open.
type Dir struct {
	d      *dirfd.Dir
	spool  *dirfd.Dir // Open's: the spool, where Write's temporary files go
	writer bool       // Open's: Write and Prune allowed
}

// Open opens <stateDir>/jobs for root (the hooks): the spool is opened
// (and made) by state.Open with its checks, then jobs/ in it, made when
// missing, root's 0755. A symlink in either place, a directory that
// another user owns or that group or others can write is refused in one
// line naming it, and nothing is written there. Open leaves the spool's
// mode alone: for users to reach jobs/, the spool must let them search it
// (state.Spool.AllowTraverse: 0711), which the hooks see to.
func Open(stateDir string) (*Dir, error) {
	sp, err := state.Open(stateDir)
	if err != nil {
		return nil, err
	}
	defer sp.Close()
	// state.Open checked that only root can change the folders above the
	// spool: its path leads to the same directory again.
	spool, err := openSpool(sp.Dir())
	if err != nil {
		return nil, err
	}
	jobs, err := spool.MkdirAt(Sub, dirfd.Mkdir{Mode: DirMode, Op: "spool", Check: writerCheck})
	if err != nil {
		spool.Close()
		return nil, fmt.Errorf("evidence records: %w", err)
	}
	return &Dir{d: jobs, spool: spool, writer: true}, nil
}

// openSpool opens the spool dir for its writer: its folder by its path
// (the admin's configured one), the spool in it without following a
// symlink, checked (writerCheck).
func openSpool(dir string) (*dirfd.Dir, error) {
	parent, name, err := openParent(dir)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	spool, err := parent.Walk(name, dirfd.Walk{Check: func(d *dirfd.Dir, st *unix.Stat_t, _ bool) error {
		return writerCheck(d, st)
	}})
	if err != nil {
		return nil, fmt.Errorf("evidence records: %w", err)
	}
	return spool, nil
}

// Path is the records' directory's path, for messages.
func (d *Dir) Path() string { return d.d.Path() }

// Close releases the directory; later calls do nothing.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	if d.spool != nil {
		d.spool.Close()
	}
	return d.d.Close()
}

// writable refuses a change (op) through OpenReader's Dir.
func (d *Dir) writable(op string) error {
	if !d.writer {
		return fmt.Errorf("%s %s: the records' directory is open for reading only", op, d.d.Path())
	}
	return nil
}

// openParent opens the folder of the spool dir by its path (the admin's
// configured one) and returns it with the spool's name in it.
func openParent(dir string) (*dirfd.Dir, string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		var parent *dirfd.Dir
		if parent, err = dirfd.Open(filepath.Dir(abs)); err == nil {
			return parent, filepath.Base(abs), nil
		}
	}
	return nil, "", fmt.Errorf("evidence records: state dir %s: %w", dir, err)
}

// writerCheck believes a directory of the writer's (root's) that group and
// others cannot write.
func writerCheck(d *dirfd.Dir, st *unix.Stat_t) error {
	return refuse(d.Path(), st, uint32(os.Geteuid()), uint32(os.Geteuid()))
}

// readerCheck believes a directory or file (at path) of root's or of the
// reader's own that group and others cannot write.
func readerCheck(path string, st *unix.Stat_t) error {
	return refuse(path, st, 0, uint32(os.Geteuid()))
}

// refuse says, naming path, why st (a directory or file) is not believed:
// owned by neither uid a nor b, or writable by group or others.
func refuse(path string, st *unix.Stat_t, a, b uint32) error {
	if st.Uid != a && st.Uid != b {
		return fmt.Errorf("refusing %s: owned by uid %d, not root", path, st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("refusing %s: writable by group or others (mode %04o)", path, st.Mode&0o7777)
	}
	return nil
}
