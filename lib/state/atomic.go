package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// WriteFileAtomic replaces dir/name with data (mode perm) the way WriteJSON
// does (dirfd.Dir.WriteAtomic), for directories that are not a spool
// (node_exporter's textfile directory): dir must exist; it is the admin's
// configured path, so a symlink to it is followed, but inside it nothing
// is: the temporary file is created exclusively and the rename replaces a
// planted link, not its target. The temporary name ".<name>.tmp-<pid>" is
// hidden from collectors that read only "*.prom". name must be a plain
// file name.
func WriteFileAtomic(dir, name string, data []byte, perm os.FileMode) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("write %s: %q is not a plain file name", dir, name)
	}
	d, err := dirfd.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: open directory %s: %w", filepath.Join(dir, name), dir, err)
	}
	defer d.Close()
	return d.WriteAtomic(name, data, dirfd.Write{Mode: uint32(perm.Perm()), Op: "spool"})
}

// Sweep removes temporary files left in the spool by processes that died
// mid-write (".<name>.tmp-<pid>[-<n>]" whose pid is gone), and returns
// their names.
// Call it under Lock; a live writer's file is never touched.
func (s *Spool) Sweep() ([]string, error) {
	if err := s.writable("sweep", "."); err != nil {
		return nil, err
	}
	names, err := s.readNames()
	if err != nil {
		return nil, err
	}
	return sweep(s.fd, s.dir, names, func(string) bool { return true })
}

// SweepTemps removes what WriteFileAtomic(dir, name, ...) left behind in
// runs that died mid-write: ".<name>.tmp-<pid>" whose pid is gone. Other
// files in dir are never touched.
func SweepTemps(dir, name string) ([]string, error) {
	d, err := dirfd.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	defer d.Close()
	names, err := d.Names()
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", dir, err)
	}
	prefix := "." + name + dirfd.TmpMarker
	return sweep(d.FD(), dir, names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// sweep unlinks, in the directory dfd, the names that are temporary files
// of dead processes and that keep accepts.
func sweep(dfd int, dir string, names []string, keep func(string) bool) ([]string, error) {
	var removed []string
	for _, n := range names {
		if !keep(n) || !dirfd.DeadTemp(n) {
			continue
		}
		crashpoint.HitAt("spool-unlink", dir, n)
		if err := unix.Unlinkat(dfd, n, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return removed, fmt.Errorf("sweep %s: %w", filepath.Join(dir, n), err)
		}
		removed = append(removed, n)
	}
	return removed, nil
}
