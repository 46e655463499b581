package nodedesc

import (
	"fmt"
	"path"

	"gpuprep/lib/host"
	"gpuprep/lib/rundir"
)

// Write stores d at Path under r: the run directory is opened for this
// write (lib/rundir: made root's 0755 when missing, never through a
// symlink, and refused when another user owns it or others can write it:
// PrepareRunDir, or the prolog's rundir.Open, moves such a one aside), the
// file 0644, replaced atomically. A symlink at /run/gpuprep or at the file
// is refused with an error naming it.
func Write(r host.Root, d *Description) error {
	return WriteIn(nil, r, d)
}

// WriteIn stores d as the node-description of the open run directory rd
// (nil: r's, opened as Write opens it), 0644, atomically, never through a
// symlink.
func WriteIn(rd *rundir.Dir, r host.Root, d *Description) error {
	err := rundir.Use(rd, r, true, func(rd *rundir.Dir) error {
		return rd.WriteAtomic(path.Base(Path), encode(d), 0o644)
	})
	if err != nil {
		return fmt.Errorf("node description: %w", err)
	}
	return nil
}

// Load reads the description at Path under r. It is an error wrapping
// ErrMissing when there is none, ErrStale (saying why) when it was written
// in another boot (/proc/sys/kernel/random/boot_id differs or cannot be
// read), in another format version, or is not a file the prolog wrote (a
// symlink, writable by others than its owner, owned by another user than
// root or the reader, in /run/gpuprep of such a user or writable by
// others; a file of uid 65534 is root's only inside a user namespace); a
// file that does not parse is an error naming it.
func Load(r host.Root) (*Description, error) {
	data, err := readTrusted(r, Path)
	if err != nil {
		return nil, err
	}
	full := r.Path(Path)
	d, err := decode(full, data)
	if err != nil {
		return nil, err
	}
	if d.Version != Version {
		return nil, fmt.Errorf("%s: %w: format version %d, this srunwrap reads %d", full, ErrStale, d.Version, Version)
	}
	boot, err := host.ReadBootID(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: cannot read this boot's id: %v", full, ErrStale, err)
	}
	if d.BootID != boot {
		return nil, fmt.Errorf("%s: %w: written in boot %s, this is boot %s", full, ErrStale, d.BootID, boot)
	}
	return d, nil
}
