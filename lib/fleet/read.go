package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gpuprep/lib/drift"
)

// Layout says which drift files a --from PATH names, for the flag's
// help.
const Layout = "a drift file (<node>.jsonl, <node>.drift.jsonl or <node>/drift.jsonl), " +
	"a node's directory holding drift.jsonl, or a directory of <node>.jsonl files and <node>/ directories holding drift.jsonl"

// errNoDriftFile is a --from directory with no drift file in it.
var errNoDriftFile = errors.New("no drift file in it (want <node>.jsonl, <node>.drift.jsonl, <node>/drift.jsonl or drift.jsonl)")

// Read reads the drift files that paths name (Files) into a
// Fleet, each once however often it is named, keeping the records at or
// after since (all when since is zero). A bad line costs only itself
// (drift.ReadFrom). A path that does not exist, names no drift file, or holds a
// file that cannot be read is an error starting with that path. It stops
// between files once ctx is done.
func Read(ctx context.Context, paths []string, since time.Time) (*Fleet, error) {
	var fl Fleet
	seen := map[string]bool{}
	for _, p := range paths {
		files, err := Files(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, ff := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			key, err := filepath.Abs(ff.Path)
			if err != nil {
				key = filepath.Clean(ff.Path)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			recs, skipped, err := readFile(ff.Path, since)
			if err != nil {
				if ff.Path == p {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				return nil, fmt.Errorf("%s: %s: %w", p, ff.Path, err)
			}
			ff.Skipped = skipped
			fl.Add(ff, recs)
		}
	}
	return &fl, nil
}

// Files lists the drift files path names, with the node each file's
// name says:
//   - a file: itself, whatever its name (an explicit path is a drift file);
//   - a directory holding drift.jsonl: that file, one node's (the directory's name);
//   - any other directory: its <node>.jsonl and <node>.drift.jsonl files
//     and the drift.jsonl of its <node>/ sub-directories, by name; names
//     starting with "." and other entries are left out (one level only).
//
// Symlinks are followed. An error (a path that does not exist, a directory
// with no drift file, a device or FIFO, a <node>.jsonl symlink to nothing)
// does not repeat path; one about a file under it names that file.
func Files(path string) ([]File, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, bare(err)
	}
	if fi.Mode().IsRegular() {
		return []File{{Path: path, Node: fileNode(path)}}, nil
	}
	if !fi.IsDir() {
		return nil, errors.New("not a regular file or directory")
	}
	own := filepath.Join(path, drift.FileName)
	ok, err := isRegular(own)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", own, err)
	}
	if ok {
		return []File{{Path: own, Node: dirNode(path)}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, bare(err)
	}
	var out []File
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // rsync's temporary files, editors' backups
		}
		p := filepath.Join(path, name)
		st, err := os.Stat(p)
		if err != nil {
			if strings.HasSuffix(name, ".jsonl") {
				return nil, fmt.Errorf("%s: %w", p, bare(err)) // a node's file, missing
			}
			continue // a dangling symlink named like no drift file
		}
		switch {
		case st.IsDir():
			sub := filepath.Join(p, drift.FileName)
			ok, err := isRegular(sub)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sub, err)
			}
			if ok {
				out = append(out, File{Path: sub, Node: name})
			}
		case st.Mode().IsRegular() && strings.HasSuffix(name, ".jsonl"):
			out = append(out, File{Path: p, Node: nameNode(name)})
		}
	}
	if len(out) == 0 {
		return nil, errNoDriftFile
	}
	return out, nil
}

// readFile reads one drift file (drift.ReadFrom); its error does not name
// the file.
func readFile(path string, since time.Time) ([]drift.Record, drift.Skipped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, drift.Skipped{}, bare(err)
	}
	defer f.Close()
	recs, skipped, err := drift.ReadFrom(f, since)
	return recs, skipped, bare(err)
}

// isRegular says whether path is a regular file; a path that does not
// exist is false and no error.
func isRegular(path string) (bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, bare(err)
	}
	return st.Mode().IsRegular(), nil
}

// fileNode is the node a drift file's name says: gpu01 for .../gpu01.jsonl,
// .../gpu01.drift.jsonl and .../gpu01/drift.jsonl.
func fileNode(path string) string {
	if filepath.Base(path) == drift.FileName {
		return dirNode(filepath.Dir(path))
	}
	return nameNode(filepath.Base(path))
}

// nameNode is a file name less ".drift.jsonl", else less ".jsonl".
func nameNode(name string) string {
	if n, ok := strings.CutSuffix(name, "."+drift.FileName); ok && n != "" {
		return n
	}
	return strings.TrimSuffix(name, ".jsonl")
}

// dirNode is a directory's own name ("" for /).
func dirNode(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	base := filepath.Base(dir)
	if base == string(filepath.Separator) || base == "." {
		return ""
	}
	return base
}

// bare is err without the operation and path an *fs.PathError adds
// ("no such file or directory"): the caller names the path once.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
