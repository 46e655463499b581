package state

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// Format is the spool's format version this gpuprep writes, and the
// newest it reads. 0 is release 0.1.0's, which wrote no format file; 1 is
// the same layout with the file. A spool of a newer format is refused by
// Open and OpenReadOnly, untouched (an error wrapping ErrNewer).
const Format = 1

// FormatName is the spool's format file, written when Open makes the
// spool; it is reserved: no data file may have this name, and List leaves
// it out.
const FormatName = "format"

// ErrNewer is wrapped by the refusal of a spool of a newer format.
var ErrNewer = dirfd.ErrNewer

// format writes the format file of a spool just made, or reads the one
// there (the spool's owner's, written by it alone) and refuses a newer
// format. An older format's spool is read as it is (format 0 and 1 share
// one layout; nothing is added to it); Format() says what was found.
func (s *Spool) format(made bool) error {
	if made {
		s.found = Format
		return s.d.WriteVersion(FormatName, Format, dirfd.Write{Mode: 0o600, Op: "spool"})
	}
	v, err := s.d.ReadVersion(FormatName, dirfd.Read{Check: func(st *unix.Stat_t) error {
		if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return fmt.Errorf("state dir %s: %s is owned by uid %d, mode %04o: not the spool's own; refusing", s.dir, FormatName, st.Uid, st.Mode&0o7777)
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("state dir %s: %w", s.dir, err)
	}
	s.found = v
	return dirfd.CheckVersion("state dir "+s.dir, v, Format)
}

// Format is the format version the spool was found in (0: no format
// file, as release 0.1.0 left it), or made in; an older one than Format
// was read as its own.
func (s *Spool) Format() int { return s.found }
