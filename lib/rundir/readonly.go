package rundir

import (
	"errors"
	"fmt"
	"io/fs"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// OpenReadOnly opens root's run directory for the writer's dry run: it
// makes, moves, sets and writes nothing, and every write through it
// fails. A missing run directory is an empty one. One the writer cannot
// trust is taken as empty when opt.Held lists nothing (a real run moves it
// aside; Moved says so), else refused as Open refuses it; a symlink is
// refused, and so is a newer format.
func OpenReadOnly(r host.Root, opt Options) (*Dir, error) {
	d := &Dir{path: r.Path(Path), opt: opt, readOnly: true}
	run, err := dirfd.Open(r.Path("/run"))
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	defer run.Close()
	dir, err := run.Walk(base, dirfd.Walk{Check: walkerCheck})
	var ue *UntrustedError
	switch {
	case errors.As(err, &ue):
		if err := d.mayMoveAside(ue); err != nil {
			return nil, err
		}
		d.moved = append(d.moved, fmt.Sprintf("%s is %s: a run would move it aside", ue.Path, ue.Why))
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		return d, nil
	case err != nil:
		return nil, err
	}
	d.dir = dir
	if d.format, err = d.stampOrRead(false); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
