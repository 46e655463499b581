package rundir

import (
	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// Trust says why a reader cannot believe a directory or file of the run
// directory (its fstat), "" when it can.
type Trust func(st *unix.Stat_t) string

// OpenReader opens root's run directory, and sub below it ("" for itself),
// for a reader that is not its writer (srunwrap, as the job's user), and
// changes nothing: /run by its path, then each directory without following
// a symlink (a *dirfd.SymlinkError), which trust must believe (else an
// *UntrustedError). The run directory's format file, when there is one,
// must be believed too and not be of a newer format (ErrNewer). A missing
// directory is an error wrapping fs.ErrNotExist. The caller closes the
// directory returned; its files are read with dirfd.Dir.ReadFile and
// FileCheck.
func OpenReader(r host.Root, sub string, trust Trust) (*dirfd.Dir, error) {
	run, err := dirfd.Open(r.Path("/run"))
	if err != nil {
		return nil, err
	}
	defer run.Close()
	check := func(d *dirfd.Dir, st *unix.Stat_t, _ bool) error {
		if why := trust(st); why != "" {
			return &UntrustedError{Path: d.Path(), Why: why}
		}
		return nil
	}
	dir, err := run.Walk(base, dirfd.Walk{Check: check})
	if err != nil {
		return nil, err
	}
	if _, err := readFormat(dir, FileCheck(dir, FormatName, trust)); err != nil {
		dir.Close()
		return nil, err
	}
	if sub == "" {
		return dir, nil
	}
	defer dir.Close()
	return dir.Walk(sub, dirfd.Walk{Check: check})
}

// FileCheck is the dirfd.Read check of the file name in dir for a reader
// that believes what trust does: an *UntrustedError (File set) otherwise.
func FileCheck(dir *dirfd.Dir, name string, trust Trust) func(st *unix.Stat_t) error {
	return func(st *unix.Stat_t) error {
		if why := trust(st); why != "" {
			return &UntrustedError{Path: dir.Join(name), Why: why, File: true}
		}
		return nil
	}
}
