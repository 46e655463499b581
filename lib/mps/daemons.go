package mps

import (
	"errors"
	"io/fs"
	"os"
	"strings"
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
		user, ok := strings.CutSuffix(e.Name(), "-"+key)
		if !ok || !e.IsDir() { // DirEntry.IsDir does not follow a symlink
			continue
		}
		p, err := Dirs(base, user, key)
		if err != nil {
			continue // not a name Dirs makes
		}
		out = append(out, Owned{User: user, Paths: p})
	}
	return out, nil
}
