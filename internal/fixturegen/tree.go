package fixturegen

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// kind is what a tree entry is.
type kind int

const (
	kindDir kind = iota
	kindFile
	kindLink
)

// entry is one file, directory or symlink of a fixture tree.
type entry struct {
	kind   kind
	data   []byte // kindFile
	target string // kindLink: relative target, as readlink shows it
}

// tree is a fixture root held in memory: node paths without the leading
// slash ("sys/devices/system/cpu/online") to entries. Write and
// WriteArchive both render the same tree, so a root on disk and its archive
// never differ.
type tree struct {
	entries map[string]*entry
	err     error // first construction error
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

// clean turns a node path ("/sys/x" or "sys/x") into a tree key.
func clean(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

func (t *tree) fail(format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf(format, args...)
	}
}

// mkdir makes p and its parents directories.
func (t *tree) mkdir(p string) {
	p = clean(p)
	if p == "" {
		return
	}
	if e, ok := t.entries[p]; ok {
		if e.kind != kindDir {
			t.fail("fixturegen: %s is both a directory and a file or link", p)
		}
		return
	}
	t.mkdir(path.Dir(p))
	t.entries[p] = &entry{kind: kindDir}
}

func (t *tree) put(p string, e *entry) {
	p = clean(p)
	if old, ok := t.entries[p]; ok {
		if old.kind == kindDir || e.kind == kindDir {
			t.fail("fixturegen: %s written as directory and non-directory", p)
			return
		}
	}
	t.mkdir(path.Dir(p))
	t.entries[p] = e
}

// file writes a file. Kernel attribute files end in a newline; callers pass
// the exact content.
func (t *tree) file(p, content string) {
	t.put(p, &entry{kind: kindFile, data: []byte(content)})
}

// line writes a one-line file: content plus "\n".
func (t *tree) line(p, content string) { t.file(p, content+"\n") }

// linef writes a one-line formatted file.
func (t *tree) linef(p, format string, args ...any) {
	t.line(p, fmt.Sprintf(format, args...))
}

// bytes writes a binary file.
func (t *tree) bytes(p string, b []byte) {
	t.put(p, &entry{kind: kindFile, data: append([]byte(nil), b...)})
}

// link makes p a symlink to the node path target, written relative to p's
// directory as the kernel does ("../../devices/...").
func (t *tree) link(p, target string) {
	p, target = clean(p), clean(target)
	rel := relPath(path.Dir(p), target)
	t.put(p, &entry{kind: kindLink, target: rel})
}

// relPath is the relative path from directory from to to (both tree keys).
func relPath(from, to string) string {
	fs := split(from)
	ts := split(to)
	i := 0
	for i < len(fs) && i < len(ts) && fs[i] == ts[i] {
		i++
	}
	var parts []string
	for range fs[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, ts[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

func split(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// paths lists every entry in sorted order; parents sort before children.
func (t *tree) paths() []string {
	ps := make([]string, 0, len(t.entries))
	for p := range t.entries {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
