package dirfd

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// The run directory and the spool each keep their format version in a
// file of their own ("format": one decimal number and a newline), written
// when gpuprep makes the directory. A directory without one is format 0:
// release 0.1.0 wrote none. A reader refuses a directory of a newer format
// than it knows (CheckVersion) and touches nothing in it; an older one it
// reads as that format.

// maxVersionFile bounds a format file: a number and a newline.
const maxVersionFile = 64

// ErrNewer is wrapped by CheckVersion's refusal of a directory written by
// a newer gpuprep.
var ErrNewer = errors.New("written by a newer gpuprep")

// ReadVersion reads the format version in the file name of d; a missing
// file is 0. r.Check says whose file is believed (r.Max is set here).
func (d *Dir) ReadVersion(name string, r Read) (int, error) {
	r.Max = maxVersionFile
	b, err := d.ReadFile(name, r)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %q is not a format version", d.Join(name), clip(strings.TrimSpace(string(b))))
	}
	return v, nil
}

// WriteVersion writes v in the file name of d (WriteAtomic with w).
func (d *Dir) WriteVersion(name string, v int, w Write) error {
	return d.WriteAtomic(name, []byte(strconv.Itoa(v)+"\n"), w)
}

// CheckVersion refuses, in one line naming the directory dir, a format
// version found that is newer than known, the newest its reader knows.
func CheckVersion(dir string, found, known int) error {
	if found > known {
		return fmt.Errorf("%s: format %d, %w; this one knows format %d at most: refusing to touch it", dir, found, ErrNewer, known)
	}
	return nil
}

// clip is s cut to 32 bytes, for messages.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
