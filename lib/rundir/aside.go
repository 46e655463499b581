package rundir

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// openSub opens the directory name in parent for the writer (mode mode
// when made: the caller sets the mode, SetMode, once it has read what it
// must first): made when missing (unless NoCreate), and, when another user
// owns it or others can write it, moved aside and made afresh where
// Options.Held allows (else an *UntrustedError saying why not). made says
// it was made afresh, or is new.
func (d *Dir) openSub(parent *dirfd.Dir, name string, mode uint32) (sub *dirfd.Dir, made bool, err error) {
	w := dirfd.Walk{Mkdir: !d.opt.NoCreate, Mode: mode, Op: "run", Check: walkerCheck}
	if !d.opt.NoCreate {
		_, lerr := parent.Lstat(name)
		made = errors.Is(lerr, unix.ENOENT)
	}
	sub, err = parent.Walk(name, w)
	var ue *UntrustedError
	if d.opt.NoCreate || !errors.As(err, &ue) {
		return sub, made, err
	}
	if err := d.mayMoveAside(ue); err != nil {
		return nil, false, err
	}
	if err := d.moveAside(parent, name, ue.Why); err != nil {
		return nil, false, err
	}
	sub, err = parent.Walk(name, w)
	return sub, true, err
}

// walkerCheck is writerCheck for dirfd.Walk.
func walkerCheck(d *dirfd.Dir, st *unix.Stat_t, _ bool) error { return writerCheck(d, st) }

// mayMoveAside is nil when nothing holds settings (Options.Held), else ue
// with why it was not moved aside.
func (d *Dir) mayMoveAside(ue *UntrustedError) error {
	if d.opt.Held == nil {
		return ue
	}
	held, err := d.opt.Held()
	switch {
	case err != nil:
		ue.Refused = fmt.Sprintf("not moved aside: cannot tell whether jobs hold settings whose state may be in it (%v)", err)
	case len(held) > 0:
		ue.Refused = fmt.Sprintf("not moved aside: settings are held by %s, whose state may be in it (give it to root with mode 0755, or end those jobs)",
			strings.Join(held, ", "))
	default:
		return nil
	}
	return ue
}

// moveAside renames name (in parent) to ".<name>.untrusted-<time>" in the
// same directory, where no reader looks, and notes it in Moved.
func (d *Dir) moveAside(parent *dirfd.Dir, name, why string) error {
	full := parent.Join(name)
	aside := "." + name + ".untrusted-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	crashpoint.Hit("run-rename", full)
	if err := unix.Renameat(parent.FD(), name, parent.FD(), aside); err != nil {
		return fmt.Errorf("move aside %s: %w", full, err)
	}
	d.moved = append(d.moved, fmt.Sprintf("%s was %s: moved aside to %s", full, why, path.Join(parent.Path(), aside)))
	return nil
}
