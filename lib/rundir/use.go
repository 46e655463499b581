package rundir

import "gpuprep/lib/host"

// Use runs fn on d or, when d is nil (a caller given no run directory: a
// test, a command that runs no hook), on root's run directory opened for
// fn alone and closed after: for the writer when write is set (made when
// missing; an untrusted one is refused, never moved aside), else read
// only.
func Use(d *Dir, r host.Root, write bool, fn func(*Dir) error) error {
	if d != nil {
		return fn(d)
	}
	var err error
	if write {
		d, err = Open(r, Options{})
	} else {
		d, err = OpenReadOnly(r, Options{})
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(d)
}
