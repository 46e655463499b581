package rundir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// untrusted are run directories a user could have planted files in.
var untrusted = []struct {
	name string
	uid  int
	mode os.FileMode
	why  string
}{
	{"attacker's", 65534, 0o755, "owned by uid 65534, not by the writer (uid 0)"},
	{"group-writable", 0, 0o775, "writable by others (mode 0775)"},
	{"sticky world-writable", 0, 0o777 | os.ModeSticky, "writable by others (mode 01777)"},
}

// plantRunDir makes root's run directory uid's with mode, holding a
// description, a notice and an IRQ list of uid's.
func plantRunDir(t *testing.T, r host.Root, uid int, mode os.FileMode) {
	t.Helper()
	d := r.Path(Path)
	if err := os.MkdirAll(d+"/jobs", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"node-description", "jobs/5", "irq-placed"} {
		if os.WriteFile(d+"/"+f, []byte("planted"), 0o644) != nil || os.Chown(d+"/"+f, uid, uid) != nil {
			t.Fatal("cannot plant")
		}
	}
	if os.Chown(d, uid, uid) != nil || os.Chmod(d, mode) != nil {
		t.Fatal("cannot set the owner and mode")
	}
}

// With no job holding settings, an untrusted run directory is moved aside,
// whatever was planted in it kept there for the admin, and made afresh:
// root's 0755, with its format file and none of the planted files.
func TestUntrustedRunDirMovedAside(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	for _, c := range untrusted {
		t.Run(c.name, func(t *testing.T) {
			r := newRoot(t)
			plantRunDir(t, r, c.uid, c.mode)
			d := mustOpen(t, r, Options{Held: nothingHeld})
			moved := d.Moved()
			prefix := r.Path(Path) + " was " + c.why + ": moved aside to " + r.Path("/run/.gpuprep.untrusted-")
			if len(moved) != 1 || !strings.HasPrefix(moved[0], prefix) {
				t.Fatalf("moved %q, want %q...", moved, prefix)
			}
			wantDir(t, r.Path(Path), 0, 0o755)
			if d.Format() != Format {
				t.Errorf("format %d", d.Format())
			}
			if _, err := d.ReadTrusted("irq-placed", 100); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the planted list is read: %v", err)
			}
			_, aside, _ := strings.Cut(moved[0], "moved aside to ")
			if b, err := os.ReadFile(aside + "/jobs/5"); err != nil || string(b) != "planted" {
				t.Errorf("the planted files are not kept aside: %q, %v", b, err)
			}
		})
	}
}

// While jobs hold settings whose state may be in it, an untrusted run
// directory is refused, in one line saying why and who holds what, and
// nothing is moved or changed; without a Held there is no move either.
// A dry run refuses it too, or, with nothing held, sees it empty.
func TestUntrustedRunDirRefusedWhileHeld(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	for _, c := range untrusted {
		t.Run(c.name, func(t *testing.T) {
			r := newRoot(t)
			plantRunDir(t, r, c.uid, c.mode)
			before := snapshot(t, r.Path("/run"))
			for _, opt := range []struct {
				name, want string
				held       func() ([]string, error)
			}{
				{"jobs hold", "; not moved aside: settings are held by job 5, job 7, whose state may be in it", jobsHeld},
				{"unknown", "; not moved aside: cannot tell whether jobs hold settings whose state may be in it (spool unreadable)",
					func() ([]string, error) { return nil, errors.New("spool unreadable") }},
				{"no Held", "", nil},
			} {
				for name, open := range map[string]func(host.Root, Options) (*Dir, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
					_, err := open(r, Options{Held: opt.held})
					var ue *UntrustedError
					want := "refusing " + r.Path(Path) + ": " + c.why + opt.want
					if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
						t.Errorf("%s, %s: %v\nwant %s...", name, opt.name, err, want)
					}
				}
			}
			d, err := OpenReadOnly(r, Options{Held: nothingHeld})
			if err != nil || len(d.Moved()) != 1 {
				t.Fatalf("dry run, nothing held: %v", err)
			}
			if _, err := d.ReadTrusted("irq-placed", 100); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("dry run reads the planted list: %v", err)
			}
			if err := d.WriteAtomic("irq-placed", nil, 0o644); err == nil {
				t.Error("a dry run wrote")
			}
			wantSame(t, before, snapshot(t, r.Path("/run")))
		})
	}
}

// wantSame says two snapshots are alike.
func wantSame(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s changed: %q, now %q", p, s, after[p])
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d entries, were %d", len(after), len(before))
	}
}

// A symlink at /run/gpuprep is refused by every opener, never moved,
// never followed: nothing lands where it points.
func TestSymlinkRunDirRefused(t *testing.T) {
	r := newRoot(t)
	elsewhere := t.TempDir()
	os.MkdirAll(r.Path("/run"), 0o755)
	if err := os.Symlink(elsewhere, r.Path(Path)); err != nil {
		t.Fatal(err)
	}
	want := "refusing " + r.Path(Path) + ": it is a symlink"
	for name, open := range map[string]func() error{
		"Open":         func() error { _, err := Open(r, Options{Held: nothingHeld}); return err },
		"OpenReadOnly": func() error { _, err := OpenReadOnly(r, Options{Held: nothingHeld}); return err },
		"OpenReader":   func() error { _, err := OpenReader(r, "", func(*unix.Stat_t) string { return "" }); return err },
	} {
		if err := open(); !errors.Is(err, dirfd.ErrSymlink) || err.Error() != want {
			t.Errorf("%s: %v", name, err)
		}
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Errorf("wrote through the link: %v", names)
	}
	if fi, err := os.Lstat(r.Path(Path)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was moved: %v", err)
	}
}

// A symlink at a file or a directory in the run directory is never
// followed: read, write and mkdir refuse it; remove takes the link alone.
func TestSymlinkInsideRefused(t *testing.T) {
	r := newRoot(t)
	d := mustOpen(t, r, Options{Held: nothingHeld})
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("root's"), 0o644)
	os.Symlink(victim, r.Path(Path+"/irq-placed"))
	os.Symlink(filepath.Dir(victim), r.Path(Path+"/jobs"))
	if _, err := d.ReadTrusted("irq-placed", 100); !errors.Is(err, dirfd.ErrSymlink) {
		t.Errorf("read: %v", err)
	}
	if err := d.WriteAtomic("irq-placed", []byte("x"), 0o644); !errors.Is(err, dirfd.ErrSymlink) {
		t.Errorf("write: %v", err)
	}
	if _, err := d.MkdirAt("jobs", 0o755); !errors.Is(err, dirfd.ErrSymlink) {
		t.Errorf("mkdir: %v", err)
	}
	if err := d.WriteAtomic("jobs/5", []byte("x"), 0o644); !errors.Is(err, dirfd.ErrSymlink) {
		t.Errorf("write through a linked directory: %v", err)
	}
	if err := d.Remove("irq-placed"); err != nil {
		t.Errorf("remove: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's" {
		t.Errorf("victim %q, %v", b, err)
	}
	if names, _ := os.ReadDir(filepath.Dir(victim)); len(names) != 1 {
		t.Errorf("the linked directory got %v", names)
	}
}

// A file another user owns, or others can write, is not believed.
func TestUntrustedFileRefused(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	r := newRoot(t)
	d := mustOpen(t, r, Options{})
	for _, c := range []struct {
		uid  int
		mode os.FileMode
		why  string
	}{{65534, 0o644, "owned by uid 65534"}, {0, 0o664, "writable by others (mode 0664)"}} {
		p := r.Path(Path + "/irq-placed")
		os.WriteFile(p, []byte("60 0 1\n"), 0o644)
		os.Chown(p, c.uid, c.uid)
		os.Chmod(p, c.mode)
		var ue *UntrustedError
		if _, err := d.ReadTrusted("irq-placed", 100); !errors.As(err, &ue) || !ue.File || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v", c.why, err)
		}
		os.Remove(p)
	}
}

// A directory in the run directory that a user owns is moved aside
// within it when nothing is held, refused while jobs hold settings.
func TestUntrustedSubdir(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	r := newRoot(t)
	mustOpen(t, r, Options{})
	os.Mkdir(r.Path(Path+"/mps"), 0o755)
	os.Chown(r.Path(Path+"/mps"), 65534, 65534)
	held := mustOpen(t, r, Options{Held: jobsHeld})
	if _, err := held.MkdirAt("mps", 0o755); err == nil || !strings.Contains(err.Error(), "not moved aside: settings are held by job 5, job 7") {
		t.Errorf("jobs hold settings: %v", err)
	}
	d := mustOpen(t, r, Options{Held: nothingHeld})
	sub, err := d.MkdirAt("mps", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	wantDir(t, r.Path(Path+"/mps"), 0, 0o755)
	if m := d.Moved(); len(m) != 1 || !strings.Contains(m[0], "moved aside to "+r.Path(Path+"/.mps.untrusted-")) {
		t.Errorf("moved %q", m)
	}
}

// A tree a user planted under an MPS directory, thousands of levels deep,
// with links to root's files, is removed whole through the run directory,
// and nothing a link points at is touched.
func TestDeepTreeUnderMPSRemoved(t *testing.T) {
	r := newRoot(t)
	d := mustOpen(t, r, Options{})
	base, err := d.MkdirAt("mps", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	base.Close()
	pipe := r.Path(Path + "/mps/alice-0123456789ab/pipe")
	os.MkdirAll(pipe, 0o700)
	os.Chown(pipe, 65534, 65534)
	os.Chmod(pipe, 0o700|os.ModeSticky)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("root's"), 0o644)
	fd, _ := unix.Open(pipe, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	for i := range 3000 {
		name := "d" + strconv.Itoa(i%3)
		if err := unix.Mkdirat(fd, name, 0o700); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	unix.Symlinkat(victim, fd, "link")
	unix.Symlinkat(filepath.Dir(victim), fd, "dirlink")
	unix.Close(fd)
	pg, err := d.RemoveAll("mps/alice-0123456789ab")
	if err != nil || pg.Left || pg.Entries < 3000 {
		t.Fatalf("RemoveAll: %+v, %v", pg, err)
	}
	if names, _ := os.ReadDir(r.Path(Path + "/mps")); len(names) != 0 {
		t.Errorf("left in mps: %v", names)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's" {
		t.Errorf("victim %q, %v", b, err)
	}
}

// Once open, the run directory is its descriptor: a directory renamed and
// replaced by a symlink afterwards redirects nothing.
func TestSwappedAfterOpen(t *testing.T) {
	r := newRoot(t)
	d := mustOpen(t, r, Options{})
	elsewhere := t.TempDir()
	if err := os.Rename(r.Path(Path), r.Path("/run/moved")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(elsewhere, r.Path(Path))
	if err := d.WriteAtomic("irq-placed", []byte("60 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Path("/run/moved/irq-placed")); err != nil {
		t.Errorf("the write did not land in the directory opened: %v", err)
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Errorf("the write followed the link: %v", names)
	}
}
