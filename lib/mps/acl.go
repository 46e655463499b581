package mps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The job's user reaches the daemon through a POSIX ACL on the pipe
// directory, which stays root's: an entry user:<uid>:--x (search only)
// lets that user's clients connect to the daemon's 0666 control socket by
// its name, and nothing else: no listing, no new file, no rename, no
// removal (the directory is not theirs, so neither chmod nor the sticky
// bit's owner exemption applies). Another user gets nothing: group and
// other have no permission.
//
// The ACL is set as the kernel takes it, the extended attribute
// system.posix_acl_access (include/uapi/linux/posix_acl_xattr.h): a
// little-endian header {u32 version = 2} and entries {u16 tag, u16 perm,
// u32 id}, sorted by tag, then id. Setting it also sets the mode's group
// bits to the mask and its other bits to the other entry.

// aclXattr is the attribute that holds a file's access ACL.
const aclXattr = "system.posix_acl_access"

// ACL entry tags and permission bits (include/uapi/linux/posix_acl.h).
const (
	aclVersion   = 2
	aclUserObj   = 0x01
	aclUser      = 0x02
	aclGroupObj  = 0x04
	aclMask      = 0x10
	aclOther     = 0x20
	aclUndefined = 0xffffffff // the id of an entry that names nobody
	aclExec      = 1
	aclAll       = 7
)

// ErrNoACL is wrapped by Grant's error when the pipe directory's file
// system does not take POSIX ACLs.
var ErrNoACL = errors.New("file system without POSIX ACLs")

// searchOnlyACL is the access ACL of a pipe directory owned by root and
// searchable by uid alone: user::rwx user:uid:--x group::--- mask::--x
// other::---.
func searchOnlyACL(uid int) []byte {
	entries := []struct {
		tag, perm uint16
		id        uint32
	}{
		{aclUserObj, aclAll, aclUndefined},
		{aclUser, aclExec, uint32(uid)},
		{aclGroupObj, 0, aclUndefined},
		{aclMask, aclExec, aclUndefined},
		{aclOther, 0, aclUndefined},
	}
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// aclSearch says whether the access ACL b (the attribute's bytes) lets
// uid search: a user:<uid> entry with x, and a mask, if any, with x.
func aclSearch(b []byte, uid int) bool {
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != aclVersion || (len(b)-4)%8 != 0 {
		return false
	}
	user, mask := false, true
	for e := b[4:]; len(e) >= 8; e = e[8:] {
		tag, perm, id := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:]), binary.LittleEndian.Uint32(e[4:])
		switch {
		case tag == aclUser && int64(id) == int64(uid):
			user = perm&aclExec != 0
		case tag == aclMask:
			mask = perm&aclExec != 0
		}
	}
	return user && mask
}

// grantSearch gives uid search access, and nothing more, to the open
// directory fd (path full, for errors), owned by root.
func grantSearch(fd int, full string, uid int) error {
	if uid < 0 {
		return fmt.Errorf("mps: %s: no uid to give access to", full)
	}
	err := unix.Fsetxattr(fd, aclXattr, searchOnlyACL(uid), 0)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("mps: %s: %w (the job's user reaches the MPS daemon through an ACL entry user:%d:--x; mount its file system with acl): %w",
			full, ErrNoACL, uid, err)
	}
	if err != nil {
		return &os.PathError{Op: "setfacl", Path: full, Err: err}
	}
	return nil
}
