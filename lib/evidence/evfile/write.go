package evfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
	"gpuprep/lib/evidence"
)

// maxUID is the largest uid an ACL entry names (undefinedID is none).
const maxUID = undefinedID - 1

// writeMu serialises writes within this process: each uses the temporary
// name ".<name>.tmp-<pid>".
var writeMu sync.Mutex

// Write writes r as the record RecordName(r.Job.ID, r.Job.Start) and
// returns that name; a record of that name is replaced (the prolog writes
// a running record, the epilog the final one). r.Format 0 is written as
// evidence.Format; a newer one is refused. The write is atomic: a
// temporary file made O_EXCL|O_NOFOLLOW in the spool (whose sweep, at the
// start of every hook run, removes a killed writer's: the records'
// directory itself is never listed to find them), root:root
// FileMode, given the ACL entry user:<r.Job.UID>:r-- (none for a uid
// unknown, < 0, or root's), written as indented JSON, fsynced, renamed
// over the name (a symlink there is replaced, never written through), and
// the directory fsynced. An ACL the file system refuses leaves the record
// written without it: Write returns the name and an *ACLError.
func (d *Dir) Write(r evidence.Record) (string, error) {
	if err := d.writable("write"); err != nil {
		return "", err
	}
	name, err := RecordName(r.Job.ID, r.Job.Start)
	if err != nil {
		return "", fmt.Errorf("write evidence record in %s: %w", d.d.Path(), err)
	}
	path := d.d.Join(name)
	acl, err := aclFor(r.Job.UID)
	if err == nil {
		err = checkFormat(&r)
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("write %s: encode: %w", path, err)
	}
	aclErr, err := d.replace(name, append(data, '\n'), acl)
	if err != nil {
		return "", err
	}
	if aclErr != nil {
		return name, &ACLError{Path: path, UID: r.Job.UID, Err: aclErr}
	}
	return name, nil
}

// aclFor is the ACL xattr that lets uid read a record; nil for uid < 0
// (unknown) and 0 (root reads it anyway).
func aclFor(uid int) ([]byte, error) {
	switch {
	case uid <= 0:
		return nil, nil
	case uid > maxUID:
		return nil, fmt.Errorf("uid %d out of range", uid)
	}
	return encodeACL(readerACL(uint32(uid))), nil
}

// checkFormat fills a zero Format in and refuses a newer one.
func checkFormat(r *evidence.Record) error {
	if r.Format == 0 {
		r.Format = evidence.Format
	}
	if r.Format < 0 || r.Format > evidence.Format {
		return fmt.Errorf("record format %d: this gpuprep writes format %d at most", r.Format, evidence.Format)
	}
	return nil
}

// replace writes data (with the ACL acl, when set) to a temporary file and
// renames it over name. aclErr is the ACL's failure, the record written
// nonetheless; err a failure to write, with the old record kept.
func (d *Dir) replace(name string, data, acl []byte) (aclErr, err error) {
	writeMu.Lock()
	defer writeMu.Unlock()
	path := d.d.Join(name)
	tmp := "." + name + dirfd.TmpMarker + strconv.Itoa(os.Getpid())
	f, err := createTemp(d.spool, tmp)
	if err != nil {
		return nil, fmt.Errorf("write %s: create %s: %w", path, tmp, err)
	}
	aclErr, err = fill(f, data, acl)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		crashpoint.HitAt("spool-rename", d.d.Path(), name)
		if rerr := unix.Renameat(d.spool.FD(), tmp, d.d.FD(), name); rerr != nil {
			err = fmt.Errorf("rename: %w", rerr)
		}
	}
	if err != nil {
		unix.Unlinkat(d.spool.FD(), tmp, 0)
		return nil, fmt.Errorf("write %s (old record kept): %w", path, err)
	}
	if err := dirfd.Fsync(d.d.FD()); err != nil {
		return aclErr, fmt.Errorf("write %s: replaced, but syncing the directory failed: %w", path, err)
	}
	return aclErr, nil
}

// createTemp creates tmp in dir, never through a symlink, root:root (when
// root) FileMode. One of that name is a dead writer's of this pid
// (writeMu is held) or a planted link: removed, never followed, and the
// create tried once more.
func createTemp(dir *dirfd.Dir, tmp string) (*os.File, error) {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	crashpoint.HitAt("spool-create", dir.Path(), tmp)
	fd, err := unix.Openat(dir.FD(), tmp, flags, FileMode)
	if errors.Is(err, unix.EEXIST) {
		if err = unix.Unlinkat(dir.FD(), tmp, 0); err == nil {
			fd, err = unix.Openat(dir.FD(), tmp, flags, FileMode)
		}
	}
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		err = unix.Fchown(fd, 0, 0)
	}
	if err == nil {
		err = unix.Fchmod(fd, FileMode) // the umask may have cut it
	}
	if err != nil {
		unix.Close(fd)
		unix.Unlinkat(dir.FD(), tmp, 0)
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir.Join(tmp)), nil
}

// fill sets the ACL acl (when set) of the temporary file f, writes data
// and fsyncs it.
func fill(f *os.File, data, acl []byte) (aclErr, err error) {
	if acl != nil {
		aclErr = setACL(int(f.Fd()), acl)
	}
	if _, err := f.Write(data); err != nil {
		return aclErr, err
	}
	return aclErr, f.Sync()
}
