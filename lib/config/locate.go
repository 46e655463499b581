package config

import (
	"errors"

	"github.com/BurntSushi/toml"
)

// locator finds the line of a key in a parsed file. The toml package keeps
// key positions private, but reports them in the ParseError it returns when an
// Unmarshaler fails: decoding a key's Primitive into stopper reveals its line.
type locator struct {
	md   toml.MetaData
	root map[string]toml.Primitive
	err  error // the parse's error; then md and root are empty
}

// newLocator parses src for locating keys.
func newLocator(src string) *locator {
	l := &locator{}
	l.md, l.err = toml.Decode(src, &l.root)
	return l
}

// stopper is a toml.Unmarshaler that always fails; see locator.
type stopper struct{}

var errStop = errors.New("stop")

func (*stopper) UnmarshalTOML(any) error { return errStop }

// line returns the line of key and true when the file holds it. Otherwise it
// returns the line of the key's deepest ancestor below the top-level tables
// (the [profiles.NAME] of a knob the profile inherits), or 0, and false.
func (l *locator) line(key []string) (int, bool) {
	if l == nil {
		return 0, false
	}
	best := 0
	cur := l.root
	for i, k := range key {
		p, ok := cur[k]
		if !ok {
			return best, false
		}
		n := l.primLine(p)
		if i == len(key)-1 {
			if n == 0 { // toml v1.6 misfiles the position of a key ""
				n = best
			}
			return n, true
		}
		if i > 0 && n > 0 {
			best = n
		}
		var next map[string]toml.Primitive
		if l.md.PrimitiveDecode(p, &next) != nil {
			return best, false
		}
		cur = next
	}
	return best, false
}

// primLine is the line where p's key is defined. A table that is only
// implied by a deeper header ([a.b] implies a) has no position of its own:
// then the first line of its contents stands for it.
func (l *locator) primLine(p toml.Primitive) int {
	var pe toml.ParseError
	if errors.As(l.md.PrimitiveDecode(p, &stopper{}), &pe) && pe.Position.Line > 0 {
		return pe.Position.Line
	}
	var sub map[string]toml.Primitive
	if l.md.PrimitiveDecode(p, &sub) != nil {
		return 0
	}
	first := 0
	for _, sp := range sub {
		if n := l.primLine(sp); n > 0 && (first == 0 || n < first) {
			first = n
		}
	}
	return first
}
