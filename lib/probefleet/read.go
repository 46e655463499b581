package probefleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gpuprep/lib/probe"
)

// MaxFileBytes is the largest verdict file Read reads (a verdict of 8
// GPUs is some 20 KiB).
const MaxFileBytes = 16 << 20

// Read's errors wrap these, for errors.Is.
var (
	// ErrTooLarge is a file over MaxFileBytes.
	ErrTooLarge = errors.New("larger than 16 MiB, not a probe verdict")
	// ErrNotVerdict is JSON without a probe result.
	ErrNotVerdict = errors.New("not a probe verdict: no result")
	// ErrDuplicate is a second verdict of a node: a note, the newer one is
	// kept.
	ErrDuplicate = errors.New("two verdicts for one node")
	// ErrNoFiles is a directory with no *.json file under it.
	ErrNoFiles = errors.New("no *.json file under it")
)

// Read reads the verdicts that paths name: a path is one verdict file
// (whatever its name) or a directory searched recursively for *.json
// files (names starting with "." left out; symlinks to files followed,
// to directories not). Each file is one node's probe.Verdict (probe-
// verdict.json as gpuprep saves it). The node is Verdict.Node, else the
// file's name less ".json" (the directory's name for probe-verdict.json).
//
// A path or file that cannot be read, is over MaxFileBytes, is not JSON or
// has no result is an error of one line naming it, and the other files are
// still read. Of two verdicts of one node the newer (Verdict.Time) is
// kept, the first read on a tie, and an error wrapping ErrDuplicate says
// so. A file named twice is read once. Nodes come sorted by name.
func Read(paths []string) ([]Node, []error) {
	var errs []error
	byName := map[string]Node{}
	seen := map[string]bool{}
	for _, p := range paths {
		files, ferrs := verdictFiles(p)
		errs = append(errs, ferrs...)
		for _, f := range files {
			key, err := filepath.Abs(f)
			if err != nil {
				key = filepath.Clean(f)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			n, err := readNode(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if old, dup := byName[n.Name]; dup {
				keep, note := newer(old, n)
				byName[n.Name] = keep
				errs = append(errs, note)
				continue
			}
			byName[n.Name] = n
		}
	}
	nodes := make([]Node, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		nodes = append(nodes, byName[name])
	}
	return nodes, errs
}

// newer is the newer of two verdicts of one node (old on a tie), and the
// note that says which was kept.
func newer(old, n Node) (Node, error) {
	keep, drop, why := old, n, "read first, same time"
	switch {
	case n.Verdict.Time.After(old.Verdict.Time):
		keep, drop, why = n, old, "newer"
	case old.Verdict.Time.After(n.Verdict.Time):
		why = "newer"
	}
	return keep, fmt.Errorf("node %s: %w: keeping %s (%s, %s), not %s (%s)", show(n.Name), ErrDuplicate,
		show(keep.Path), stamp(keep.Verdict.Time), why, show(drop.Path), stamp(drop.Verdict.Time))
}

// verdictFiles is path if it is not a directory, else the *.json files
// under it, in lexical order; the errors name what could not be read.
func verdictFiles(path string) ([]string, []error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", show(path), bare(err))}
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	var errs []error
	walk := func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", show(p), bare(err)))
			return nil
		case p != path && strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir() || !strings.HasSuffix(d.Name(), ".json"):
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			st, err := os.Stat(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", show(p), bare(err)))
			} else if st.Mode().IsRegular() {
				files = append(files, p)
			}
		case d.Type().IsRegular():
			files = append(files, p)
		}
		return nil
	}
	if err := filepath.WalkDir(path, walk); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", show(path), bare(err)))
	}
	if len(files) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: %w", show(path), ErrNoFiles))
	}
	return files, errs
}

// readNode reads one verdict file; its error names the file.
func readNode(path string) (Node, error) {
	fail := func(err error) (Node, error) { return Node{}, fmt.Errorf("%s: %w", show(path), err) }
	f, err := os.Open(path)
	if err != nil {
		return fail(bare(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxFileBytes {
		return fail(ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return fail(bare(err))
	}
	if len(data) > MaxFileBytes {
		return fail(ErrTooLarge)
	}
	var v probe.Verdict
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fail(fmt.Errorf("not JSON at byte %d: %w", se.Offset, err))
		}
		return fail(fmt.Errorf("not a probe verdict: %w", err))
	}
	if v.Result == nil {
		return fail(ErrNotVerdict)
	}
	name := v.Node
	if name == "" {
		name = fileNode(path)
	}
	return Node{Name: name, Path: path, Verdict: v}, nil
}

// fileNode is the node a verdict file's name says: gpu01 for gpu01.json
// and for gpu01/probe-verdict.json.
func fileNode(path string) string {
	base := filepath.Base(path)
	if base == probe.VerdictFile {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if dir := filepath.Base(filepath.Dir(path)); dir != string(filepath.Separator) && dir != "." {
			return dir
		}
	}
	return strings.TrimSuffix(base, ".json")
}

// stamp is a verdict's time for a message.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "no time"
	}
	return t.UTC().Format(time.RFC3339)
}

// show is s quoted when it holds a control character (a newline would
// split an error's one line) or is empty.
func show(s string) string {
	if s == "" || strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// bare is err without the operation and path an *fs.PathError adds: the
// caller names the path once.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
