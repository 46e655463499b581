package evfile

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// A POSIX access ACL, as Linux keeps it in the extended attribute
// system.posix_acl_access: a header (version 2, uint32) then entries
// {tag uint16, perm uint16, id uint32}, little-endian, sorted by tag then
// id; the id is undefinedID in all but ACL_USER (and ACL_GROUP) entries.
const (
	aclXattr    = "system.posix_acl_access"
	aclVersion  = 2
	tagUserObj  = 0x01
	tagUser     = 0x02
	tagGroupObj = 0x04
	tagMask     = 0x10
	tagOther    = 0x20
	undefinedID = 0xFFFFFFFF
	permR       = 4
	permW       = 2
	aclHeader   = 4
	aclEntry    = 8
)

// entry is one entry of an ACL.
type entry struct {
	Tag, Perm uint16
	ID        uint32
}

// readerACL is the ACL of a record (FileMode, 0640) that uid reads too:
// user::rw- user:<uid>:r-- group::r-- mask::r-- other::---.
func readerACL(uid uint32) []entry {
	return []entry{
		{tagUserObj, permR | permW, undefinedID},
		{tagUser, permR, uid},
		{tagGroupObj, permR, undefinedID},
		{tagMask, permR, undefinedID},
		{tagOther, 0, undefinedID},
	}
}

// encodeACL is the xattr value of es, sorted by tag then id.
func encodeACL(es []entry) []byte {
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.Tag, b.Tag), cmp.Compare(a.ID, b.ID))
	})
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, e.Tag)
		b = binary.LittleEndian.AppendUint16(b, e.Perm)
		b = binary.LittleEndian.AppendUint32(b, e.ID)
	}
	return b
}

// decodeACL reads an xattr value back.
func decodeACL(b []byte) ([]entry, error) {
	if len(b) < aclHeader || (len(b)-aclHeader)%aclEntry != 0 {
		return nil, fmt.Errorf("ACL of %d bytes: not a header and whole entries", len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != aclVersion {
		return nil, fmt.Errorf("ACL version %d, not %d", v, aclVersion)
	}
	var es []entry
	for b = b[aclHeader:]; len(b) > 0; b = b[aclEntry:] {
		es = append(es, entry{
			Tag:  binary.LittleEndian.Uint16(b),
			Perm: binary.LittleEndian.Uint16(b[2:]),
			ID:   binary.LittleEndian.Uint32(b[4:]),
		})
	}
	return es, nil
}

// setACL sets the access ACL of the open file fd (a variable: the tests
// stand in a file system without ACLs).
var setACL = func(fd int, acl []byte) error {
	return unix.Fsetxattr(fd, aclXattr, acl, 0)
}

// ACLError is a record written, whose job's user cannot read it: its ACL
// could not be set (Err; unix.EOPNOTSUPP: the file system has no ACLs).
// Write returns it with the record's name: a warning, not a failure.
type ACLError struct {
	Path string
	UID  int
	Err  error
}

// Error says which record its job's user cannot read, and why.
func (e *ACLError) Error() string {
	why := "setting its ACL failed: " + e.Err.Error()
	if errors.Is(e.Err, unix.EOPNOTSUPP) {
		why = "the filesystem has no ACLs"
	}
	return fmt.Sprintf("%s: written, but the job's user (uid %d) cannot read it: %s", e.Path, e.UID, why)
}

// Unwrap is the ACL's failure (unix.EOPNOTSUPP: no ACLs).
func (e *ACLError) Unwrap() error { return e.Err }
