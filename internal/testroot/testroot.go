// Package testroot unpacks fixture roots (test/roots/<name>.tar.gz: the
// generated shapes of internal/fixturegen and roots captured from real
// nodes) into a test's temporary directory.
//
// Archives are unpacked as they are: directories, regular files and
// symlinks, whose targets are kept verbatim, absolute ones included (a
// captured root may hold some); they are never followed while unpacking. An
// entry whose name would land outside the directory, or that would be written
// through a symlink, fails the test.
package testroot

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// rootsDir is where the archives live, relative to the module root.
const rootsDir = "test/roots"

// ModuleRoot is the directory holding go.mod, found by walking up from the
// working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testroot: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Module is ModuleRoot for a test: a missing go.mod fails t.
func Module(t testing.TB) string {
	t.Helper()
	r, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Archive is the path of test/roots/<name>.tar.gz.
func Archive(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, rootsDir, name+".tar.gz"), nil
}

// Names lists the available fixture roots (test/roots/*.tar.gz), sorted.
func Names() []string {
	root, err := ModuleRoot()
	if err != nil {
		return nil
	}
	matches, _ := filepath.Glob(filepath.Join(root, rootsDir, "*.tar.gz"))
	var names []string
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".tar.gz"))
	}
	sort.Strings(names)
	return names
}

// Unpack unpacks test/roots/<name>.tar.gz into a new temporary directory of
// the test and returns it.
func Unpack(t testing.TB, name string) string {
	t.Helper()
	f := openArchive(t, name)
	defer f.Close()
	dir := rootDir(t)
	if err := Extract(f, dir); err != nil {
		t.Fatalf("testroot: fixture %q: %v", name, err)
	}
	return dir
}

// openArchive opens test/roots/<name>.tar.gz or fails the test.
func openArchive(t testing.TB, name string) *os.File {
	t.Helper()
	archive, err := Archive(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatalf("testroot: fixture %q: %v", name, err)
	}
	return f
}

// Extract unpacks a .tar.gz stream into dir, which must exist.
func Extract(r io.Reader, dir string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if name == "" { // the archive's "./"
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := checkParents(dir, name); err != nil {
			return err
		}
		mode := h.FileInfo().Mode().Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{dst, mode | 0o700})
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := removeNonDir(dst); err != nil {
				return err
			}
			out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o600)
			if err != nil {
				return err
			}
			_, cerr := io.Copy(out, tr)
			if err := out.Close(); cerr == nil {
				cerr = err
			}
			if cerr != nil {
				return fmt.Errorf("%s: %w", name, cerr)
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := removeNonDir(dst); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, dst); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := entryName(h.Linkname)
			if err != nil || target == "" {
				return fmt.Errorf("%s: hard link to %q outside the root", name, h.Linkname)
			}
			if err := checkParents(dir, target); err != nil {
				return err
			}
			src := filepath.Join(dir, filepath.FromSlash(target))
			if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
				return fmt.Errorf("%s: hard link to %q, not an unpacked file", name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := removeNonDir(dst); err != nil {
				return err
			}
			if err := os.Link(src, dst); err != nil {
				return err
			}
		default:
			// Devices, FIFOs and the like have no place in a fixture root.
			continue
		}
	}
	// Directory modes last, so that read-only directories do not stop the
	// unpacking; keep them writable by the owner so t.TempDir can clean up.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

// entryName cleans an archive entry name ("./sys/x", "sys/x/") into a local
// slash path; "" for the root itself. Absolute names and names climbing out
// with ".." are refused.
func entryName(n string) (string, error) {
	if strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return "", fmt.Errorf("archive entry %q is not a relative path", n)
	}
	c := path.Clean(n)
	if c == "." {
		return "", nil
	}
	if c == ".." || strings.HasPrefix(c, "../") || !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", fmt.Errorf("archive entry %q escapes the root", n)
	}
	return c, nil
}

// checkParents refuses an entry whose parent directories include a symlink:
// writing through it could land anywhere (an absolute link points out of the
// root).
func checkParents(dir, name string) error {
	parts := strings.Split(name, "/")
	cur := dir
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("archive entry %q goes through symlink %q", name, strings.TrimPrefix(cur, dir+string(filepath.Separator)))
		}
		if !fi.IsDir() {
			return fmt.Errorf("archive entry %q: %q is not a directory", name, p)
		}
	}
	return nil
}

// removeNonDir clears a file or symlink already at p (a later entry wins, as
// with tar).
func removeNonDir(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s: an entry replaces a directory", p)
	}
	return os.Remove(p)
}
