package rundir

import (
	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// Format is the run directory's format version this gpuprep writes, and
// the newest it reads. 0 is release 0.1.0's, which wrote no format file;
// 1 is the same layout with the file. A directory of a newer format is
// refused, untouched (dirfd.CheckVersion: an error wrapping ErrNewer).
const Format = 1

// FormatName is the run directory's format file.
const FormatName = "format"

// ErrNewer is wrapped by the refusal of a run directory of a newer format.
var ErrNewer = dirfd.ErrNewer

// stampOrRead writes the format file in a run directory just made, or
// reads the one there and refuses a newer format.
func (d *Dir) stampOrRead(made bool) (int, error) {
	if made {
		err := d.dir.WriteVersion(FormatName, Format, dirfd.Write{Mode: 0o644, Op: "run", Regular: true})
		return Format, err
	}
	return readFormat(d.dir, func(st *unix.Stat_t) error { return fileCheck(d.dir, FormatName, st) })
}

// readFormat reads dir's format file, as check believes it, and refuses a
// newer format.
func readFormat(dir *dirfd.Dir, check func(st *unix.Stat_t) error) (int, error) {
	v, err := dir.ReadVersion(FormatName, dirfd.Read{Check: check})
	if err == nil {
		err = dirfd.CheckVersion(dir.Path(), v, Format)
	}
	return v, err
}

// fileCheck refuses, for the writer, a file of dir (name, fstat st) that
// another user owns or others can write.
func fileCheck(dir *dirfd.Dir, name string, st *unix.Stat_t) error {
	if why := writerProblem(st); why != "" {
		return &UntrustedError{Path: dir.Join(name), Why: why, File: true}
	}
	return nil
}
