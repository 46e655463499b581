package rundir

import (
	"fmt"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// Sweep removes the temporary files that killed writes left in the run
// directory and in its subdirectories of the writer's (dirfd.DeadTemp: a
// ".<name>.tmp-<pid>" whose process is gone), and returns their names
// relative to the run directory. A subdirectory another user owns (an MPS
// daemon's) is never entered; nothing deeper than one level is looked at,
// as no writer of the run directory writes deeper. Call it under the
// node lock.
func (d *Dir) Sweep() ([]string, error) {
	if err := d.writable("sweep", "."); err != nil {
		return nil, err
	}
	if d.dir == nil {
		return nil, nil
	}
	removed, subs, err := sweepDir(d.dir, "")
	if err != nil {
		return removed, err
	}
	for _, name := range subs {
		sub, oerr := d.OpenDir(name)
		if oerr != nil {
			continue // not the writer's alone: not ours to sweep
		}
		r, _, serr := sweepDir(sub, name+"/")
		sub.Close()
		removed = append(removed, r...)
		if serr != nil {
			return removed, serr
		}
	}
	return removed, nil
}

// sweepDir unlinks dir's dead temporary files (named prefix+name in
// removed) and lists its subdirectories.
func sweepDir(dir *dirfd.Dir, prefix string) (removed, subs []string, err error) {
	names, err := dir.Names()
	if err != nil {
		return nil, nil, fmt.Errorf("sweep: %w", err)
	}
	for _, n := range names {
		if !dirfd.DeadTemp(n) {
			if st, serr := dir.Lstat(n); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				subs = append(subs, n)
			}
			continue
		}
		crashpoint.HitAt("run-unlink", dir.Path(), n)
		if err := dir.Unlink(n); err != nil {
			return removed, subs, fmt.Errorf("sweep: %w", err)
		}
		removed = append(removed, prefix+n)
	}
	return removed, subs, nil
}
