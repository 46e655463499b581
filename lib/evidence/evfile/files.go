package evfile

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/evidence"
)

// ReadFiles reads the record files, and the directories of them, that
// paths name (a command line's --from DIR...: copies collected from the
// nodes, read as the invoking user, whoever owns them). A directory's
// "*.json" files are read (not those starting with "."; no subdirectory);
// the last part of each path, and every file in a directory, is opened
// without following a symlink (a *dirfd.SymlinkError) and must be a
// regular file. It returns every record it read, newest start first, and
// why each file it left out was (a newer format: ErrNewer).
func ReadFiles(paths ...string) ([]evidence.Record, []error) {
	var recs []evidence.Record
	var errs []error
	for _, p := range paths {
		r, e := readPath(p)
		recs, errs = append(recs, r...), append(errs, e...)
	}
	sortNewest(recs)
	return recs, errs
}

// readPath reads the record file, or directory of them, at p.
func readPath(p string) ([]evidence.Record, []error) {
	p = filepath.Clean(p)
	dir, base := filepath.Dir(p), filepath.Base(p)
	if base == "." || base == ".." || base == "/" {
		dir, base = p, ""
	}
	parent, err := dirfd.Open(dir)
	if err != nil {
		return nil, []error{fmt.Errorf("read records %s: %w", p, err)}
	}
	defer parent.Close()
	if base == "" {
		return readDir(parent)
	}
	st, err := parent.Lstat(base)
	if err != nil {
		return nil, []error{err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		r, err := readFile(parent, base)
		if err != nil {
			return nil, []error{err}
		}
		return []evidence.Record{r}, nil
	}
	sub, err := parent.OpenDir(base)
	if err != nil {
		return nil, []error{err}
	}
	defer sub.Close()
	return readDir(sub)
}

// readDir reads the "*.json" files of d, but those starting with ".".
func readDir(d *dirfd.Dir) ([]evidence.Record, []error) {
	names, err := d.Names()
	if err != nil {
		return nil, []error{err}
	}
	var recs []evidence.Record
	var errs []error
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ext) {
			continue
		}
		r, err := readFile(d, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs = append(recs, r)
	}
	return recs, errs
}

// readFile reads the record file name of d, never through a symlink.
func readFile(d *dirfd.Dir, name string) (evidence.Record, error) {
	data, err := d.ReadFile(name, dirfd.Read{Max: maxRecord})
	if err != nil {
		return evidence.Record{}, err
	}
	return decode(d.Join(name), data)
}
