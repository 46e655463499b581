package knob

import (
	"errors"
	"io/fs"
	"path/filepath"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/mps"
	"gpuprep/lib/rundir"
)

// The mps knob's daemons' directories lie in a base directory, opened for
// each use: the run directory's mps (mps.DefaultBase: Env.RunDir, else the
// root's run directory opened for the call; lib/rundir), or MPSEnv.Base,
// opened from / down (mps.OpenBase). Every call below is relative to it.

// mpsSub is mps.DefaultBase's name in the run directory.
const mpsSub = "mps"

// withBase runs fn on the daemons' base, open; for a reader (write false)
// a missing base is nil, for a writer it is made root's 0755.
func (k *mpsKnob) withBase(write bool, fn func(base *dirfd.Dir) error) error {
	if k.run.env.MPS.Base != "" {
		return runIn(func() (*dirfd.Dir, error) { return mps.OpenBase(k.run.env.MPS.Base, write) }, write, fn)
	}
	return rundir.Use(k.run.env.RunDir, k.run.env.Root, write, func(rd *rundir.Dir) error {
		return runIn(func() (*dirfd.Dir, error) {
			if write {
				return rd.MkdirAt(mpsSub, 0o755)
			}
			return rd.OpenDir(mpsSub)
		}, write, fn)
	})
}

// runIn opens the base and runs fn on it.
func runIn(open func() (*dirfd.Dir, error), write bool, fn func(base *dirfd.Dir) error) error {
	base, err := open()
	if !write && errors.Is(err, fs.ErrNotExist) {
		return fn(nil)
	}
	if err != nil {
		return err
	}
	defer base.Close()
	return fn(base)
}

// daemons lists the daemon directories for the GPU set key (mps.DaemonsIn).
func (k *mpsKnob) daemons(key string) (owned []mps.Owned, err error) {
	err = k.withBase(false, func(base *dirfd.Dir) error {
		owned, err = mps.DaemonsIn(base, key)
		return err
	})
	return owned, err
}

// exists says whether p's daemon directory is there (a dead daemon's).
func (k *mpsKnob) exists(p mps.Paths) bool {
	found := false
	k.withBase(false, func(base *dirfd.Dir) error {
		if base != nil {
			_, err := base.Lstat(filepath.Base(p.Dir))
			found = err == nil
		}
		return nil
	})
	return found
}

// create makes p's directories for a new daemon of uid (mps.CreateIn).
func (k *mpsKnob) create(p mps.Paths, uid int) error {
	return k.withBase(true, func(base *dirfd.Dir) error { return mps.CreateIn(base, p, uid) })
}

// remove deletes p's directories (mps.RemoveIn).
func (k *mpsKnob) remove(p mps.Paths) (pg mps.Purged, err error) {
	err = k.withBase(true, func(base *dirfd.Dir) error {
		pg, err = mps.RemoveIn(base, p)
		return err
	})
	return pg, err
}
