package rundir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// nothingHeld is Options.Held of a node no job holds settings on.
func nothingHeld() ([]string, error) { return nil, nil }

// jobsHeld is Options.Held of a node where jobs 5 and 7 hold settings.
func jobsHeld() ([]string, error) { return []string{"job 5", "job 7"}, nil }

func newRoot(t *testing.T) host.Root {
	t.Helper()
	return host.NewRoot(t.TempDir())
}

func mustOpen(t *testing.T, r host.Root, opt Options) *Dir {
	t.Helper()
	d, err := Open(r, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// wantDir says path is a directory of uid with mode perm.
func wantDir(t *testing.T, path string, uid int, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode() != os.ModeDir|perm || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("%s: %v, %v; want a directory of uid %d, mode %v", path, fi, err, uid, perm)
	}
}

// Open makes the run directory (and a fixture's /run) root's 0755 with
// its format file, reads it back the next time, and files go through it:
// written atomically with their mode, read, removed.
func TestOpenMakesRunDir(t *testing.T) {
	r := newRoot(t)
	d := mustOpen(t, r, Options{})
	if d.Format() != Format || d.Path() != r.Path(Path) {
		t.Errorf("format %d, path %s", d.Format(), d.Path())
	}
	wantDir(t, r.Path(Path), os.Geteuid(), 0o755)
	if b, err := os.ReadFile(r.Path(Path + "/" + FormatName)); err != nil || string(b) != "1\n" {
		t.Errorf("format file %q, %v", b, err)
	}
	if err := d.WriteAtomic("irq-placed", []byte("60 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := d.ReadTrusted("irq-placed", 100); err != nil || string(b) != "60 0 1\n" {
		t.Errorf("read back %q, %v", b, err)
	}
	sub, err := d.MkdirAt("units", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	wantDir(t, r.Path(Path+"/units"), os.Geteuid(), 0o700)
	if err := d.WriteAtomic("units/a.service", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"units/a.service", "units/a.service", "irq-placed", "jobs/5"} {
		if err := d.Remove(n); err != nil {
			t.Errorf("remove %s: %v", n, err)
		}
	}
	again := mustOpen(t, r, Options{})
	if again.Format() != Format || len(again.Moved()) != 0 {
		t.Errorf("again: format %d, moved %v", again.Format(), again.Moved())
	}
}

// A run directory without a format file (release 0.1.0's, or one
// tmpfiles.d made) is format 0 and is read as it is: nothing is added.
func TestMissingFormatIsZero(t *testing.T) {
	r := newRoot(t)
	os.MkdirAll(r.Path(Path), 0o755)
	os.WriteFile(r.Path(Path+"/irq-placed"), []byte("60 0 1\n"), 0o644)
	for name, open := range map[string]func(host.Root, Options) (*Dir, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		d, err := open(r, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b, err := d.ReadTrusted("irq-placed", 100); d.Format() != 0 || err != nil || string(b) != "60 0 1\n" {
			t.Errorf("%s: format %d, %q, %v", name, d.Format(), b, err)
		}
		d.Close()
	}
	rd, err := OpenReader(r, "", func(*unix.Stat_t) string { return "" })
	if err != nil {
		t.Fatalf("OpenReader: %v", err)
	}
	rd.Close()
	if _, err := os.Lstat(r.Path(Path + "/" + FormatName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a format file was added: %v", err)
	}
}

// snapshot is every entry under dir: its mode, owner, size and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := os.Lstat(p)
		st := fi.Sys().(*syscall.Stat_t)
		b, _ := os.ReadFile(p)
		out[p] = fi.Mode().String() + " " + strings.Repeat("u", int(st.Uid%7)) + " " + fi.ModTime().String() + " " + string(b)
		return nil
	})
	return out
}

// A run directory of a newer format is refused by every opener, in one
// line naming it, and nothing in it is touched: not its mode (which Open
// would fix), not its files, no format file rewritten, nothing moved.
func TestNewerFormatRefused(t *testing.T) {
	r := newRoot(t)
	os.MkdirAll(r.Path(Path+"/jobs"), 0o755)
	os.Chmod(r.Path(Path), 0o700)
	os.WriteFile(r.Path(Path+"/"+FormatName), []byte("2\n"), 0o644)
	os.WriteFile(r.Path(Path+"/node-description"), []byte("a newer one"), 0o644)
	before := snapshot(t, r.Path("/run"))
	opens := map[string]func() error{
		"Open":         func() error { _, err := Open(r, Options{Held: nothingHeld}); return err },
		"OpenReadOnly": func() error { _, err := OpenReadOnly(r, Options{Held: nothingHeld}); return err },
		"OpenReader":   func() error { _, err := OpenReader(r, "jobs", func(*unix.Stat_t) string { return "" }); return err },
		"Use":          func() error { return Use(nil, r, true, func(*Dir) error { return nil }) },
	}
	for name, open := range opens {
		err := open()
		if !errors.Is(err, ErrNewer) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), r.Path(Path)+": format 2, written by a newer gpuprep") {
			t.Errorf("%s: %v", name, err)
		}
	}
	after := snapshot(t, r.Path("/run"))
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s changed: %q, now %q", p, s, after[p])
		}
	}
	if len(after) != len(before) {
		t.Errorf("entries %d, were %d", len(after), len(before))
	}
}

// The tmpfiles.d rule makes the run directory at boot with this format.
func TestTmpfilesFormat(t *testing.T) {
	b, err := os.ReadFile("../../examples/tmpfiles.d/gpuprep.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := "f     /run/gpuprep/format  0644 root root  -    1"
	if !strings.Contains(string(b), want+"\n") || Format != 1 {
		t.Errorf("examples/tmpfiles.d/gpuprep.conf lacks %q (format %d)", want, Format)
	}
}
