package mps

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// Owned is a daemon directory found under a base: the user it was made
// for and its paths.
type Owned struct {
	User  string
	Paths Paths
}

// Daemons lists the daemon directories under base (a directory on this
// machine, as Dirs takes it) made for the GPU set key: <user>-<key>, real
// directories only (a symlink is no daemon's), sorted by user. A missing
// base is none. Whether a daemon runs for each is Control.Alive's to say.
func Daemons(base, key string) ([]Owned, error) {
	ents, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Owned
	for _, e := range ents {
		if o, ok := owned(base, e.Name(), key, e.IsDir()); ok { // DirEntry.IsDir does not follow a symlink
			out = append(out, o)
		}
	}
	return out, nil
}

// DaemonsIn is Daemons in the open base (the run directory's mps, opened
// by lib/rundir); nil base is none.
func DaemonsIn(base *dirfd.Dir, key string) ([]Owned, error) {
	if base == nil {
		return nil, nil
	}
	names, err := base.Names()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []Owned
	for _, n := range names {
		st, err := base.Lstat(n)
		if err != nil {
			continue // gone meanwhile
		}
		if o, ok := owned(base.Path(), n, key, st.Mode&unix.S_IFMT == unix.S_IFDIR); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// owned is the daemon directory name in base, if it is one made for key.
func owned(base, name, key string, isDir bool) (Owned, bool) {
	user, ok := strings.CutSuffix(name, "-"+key)
	if !ok || !isDir {
		return Owned{}, false
	}
	p, err := Dirs(base, user, key)
	if err != nil {
		return Owned{}, false // not a name Dirs makes
	}
	return Owned{User: user, Paths: p}, true
}
