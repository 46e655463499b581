package evfile

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
)

// staleTemp is the age past which a record's temporary file is a dead
// writer's (a write takes milliseconds).
const staleTemp = time.Hour

// file is a record file of the directory: its name, size and mtime (when
// its run ended: the last write).
type file struct {
	name  string
	size  int64
	mtime time.Time
}

// Prune removes records: those whose last write (mtime) is more than
// keepDays days before now, then, oldest first, as many as it takes for
// the records left to total at most keepMB MiB. keepDays <= 0 or keepMB
// <= 0 turns that rule off. The record keep (a name: the one just
// written) is never removed. Only regular files named as records
// (RecordName) are counted and removed, never through a symlink, and the
// temporary files of writers that died (older than an hour). It returns
// the names it removed and, joined, why any could not be.
func (d *Dir) Prune(keepDays, keepMB int, now time.Time, keep string) ([]string, error) {
	if err := d.writable("prune"); err != nil {
		return nil, err
	}
	files, temps, err := d.list(now)
	if err != nil {
		return nil, err
	}
	var gone []string
	var errs []error
	remove := func(name string) {
		crashpoint.HitAt("spool-unlink", d.d.Path(), name)
		if err := d.d.Unlink(name); err != nil {
			errs = append(errs, err)
			return
		}
		gone = append(gone, name)
	}
	for _, t := range temps {
		remove(t)
	}
	for _, f := range pick(files, keepDays, keepMB, now, keep) {
		remove(f)
	}
	return gone, errors.Join(errs...)
}

// pick is the names of files (oldest first) that the rules remove.
func pick(files []file, keepDays, keepMB int, now time.Time, keep string) []string {
	var out []string
	var left []file
	cutoff := now.AddDate(0, 0, -keepDays)
	var total int64
	for _, f := range files {
		if keepDays > 0 && f.mtime.Before(cutoff) && f.name != keep {
			out = append(out, f.name)
			continue
		}
		left = append(left, f)
		total += f.size
	}
	limit := int64(keepMB) << 20
	for _, f := range left {
		if keepMB <= 0 || total <= limit {
			break
		}
		if f.name != keep {
			out = append(out, f.name)
			total -= f.size
		}
	}
	return out
}

// list is the record files of the directory, oldest first, and the
// temporary files of dead writers.
func (d *Dir) list(now time.Time) ([]file, []string, error) {
	names, err := d.d.Names()
	if err != nil {
		return nil, nil, err
	}
	var files []file
	var temps []string
	for _, n := range names {
		_, _, rec := parseName(n)
		if !rec && !isTemp(n) {
			continue
		}
		st, err := d.d.Lstat(n)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue // gone meanwhile, or not a file of ours
		}
		f := file{name: n, size: st.Size, mtime: time.Unix(st.Mtim.Unix())}
		switch {
		case rec:
			files = append(files, f)
		case now.Sub(f.mtime) > staleTemp:
			temps = append(temps, n)
		}
	}
	slices.SortFunc(files, func(a, b file) int {
		return cmp.Or(a.mtime.Compare(b.mtime), cmp.Compare(a.name, b.name))
	})
	return files, temps, nil
}
