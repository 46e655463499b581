package nodedesc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// userNS writes the root's /proc/self/uid_map: an enroot/pyxis user
// namespace mapping the user alone, or the initial namespace's identity.
func userNS(t *testing.T, root string, inside bool) {
	t.Helper()
	m := "         0          0 4294967295\n"
	if inside {
		m = "      1000       1000          1\n"
	}
	p := filepath.Join(root, uidMapPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A reader believes a description only from root (or itself), in a
// /run/gpuprep of root's that nobody else can write. Uid 65534 stands
// for the host's root only inside a user namespace (/proc/self/uid_map
// not the identity); outside one it is nobody's, and refused.
func TestLoadTrustsOnlyRoot(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	for _, c := range []struct {
		name            string
		userns          bool
		dirUID, fileUID int
		dirMode, mode   os.FileMode
		want            string // "" ok, else in the ErrStale error
	}{
		{"root's", false, 0, 0, 0o755, 0o644, ""},
		{"root's in a user namespace", true, 0, 0, 0o755, 0o644, ""},
		{"host root's as seen in a user namespace", true, 65534, 65534, 0o755, 0o644, ""},
		{"nobody's file outside a user namespace", false, 0, 65534, 0o755, 0o644, "node-description: node description stale: owned by uid 65534 (nobody), not root; outside a user namespace only root's is read"},
		{"nobody's directory outside a user namespace", false, 65534, 0, 0o755, 0o644, "run/gpuprep: node description stale: directory owned by uid 65534 (nobody), not root"},
		{"another user's file", true, 0, 1234, 0o755, 0o644, "node-description: node description stale: owned by uid 1234, not root"},
		{"another user's directory", false, 1234, 0, 0o755, 0o644, "run/gpuprep: node description stale: directory owned by uid 1234, not root"},
		{"another user's directory in a user namespace", true, 1234, 0, 0o755, 0o644, "directory owned by uid 1234, not root"},
		{"world-writable directory", false, 0, 0, 0o777, 0o644, "run/gpuprep: node description stale: directory writable by others (mode 0777)"},
		{"group-writable directory", true, 65534, 65534, 0o775, 0o644, "directory writable by others (mode 0775)"},
		{"sticky world-writable directory", false, 0, 0, 0o1777, 0o644, "directory writable by others"},
		{"group-writable file", false, 0, 0, 0o755, 0o664, "node-description: node description stale: writable by others (mode 0664)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := emptyRoot(t)
			userNS(t, r.Dir(), c.userns)
			if err := Write(r, &Description{Version: Version, BootID: bootA}); err != nil {
				t.Fatal(err)
			}
			dir := r.Path(runDir)
			if os.Chown(dir, c.dirUID, 0) != nil || os.Chmod(dir, c.dirMode) != nil ||
				os.Chown(r.Path(Path), c.fileUID, 0) != nil || os.Chmod(r.Path(Path), c.mode) != nil {
				t.Fatal("cannot set owners and modes")
			}
			_, err := Load(r)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (!errors.Is(err, ErrStale) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an ErrStale error with %q", err, c.want)
			}
		})
	}
}

// Notices are read from /run/gpuprep/jobs on the same terms.
func TestLoadNoticeTrustsOnlyRoot(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	r := emptyRoot(t)
	if err := WriteNotice(r, Notice{Job: 5, Messages: []string{"hello"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := LoadNotice(r, 5); err != nil || len(n.Messages) != 1 {
		t.Fatalf("root's notice: %+v, %v", n, err)
	}
	if err := os.Chown(r.Path(NoticeDir), 1234, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNotice(r, 5); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "run/gpuprep/jobs: node description stale: directory owned by uid 1234") {
		t.Errorf("notice in another user's directory: %v", err)
	}
}

// The prolog (PrepareRunDir) moves aside a /run/gpuprep, or a jobs
// directory, that another user owns or others can write, with whatever
// was planted in it, and makes it afresh, root's 0755; the writer refuses
// such a directory; a root-owned one the umask cut is only made 0755.
func TestPrepareRunDir(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	plant := func(t *testing.T, r host.Root, uid int, mode os.FileMode) {
		d := r.Path(runDir)
		if err := os.MkdirAll(d+"/jobs", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{d + "/node-description", d + "/jobs/5"} {
			if err := os.WriteFile(f, []byte("planted"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chown(f, uid, 0)
		}
		if os.Chown(d, uid, 0) != nil || os.Chmod(d, mode) != nil {
			t.Fatal("cannot set the owner and mode")
		}
	}
	for _, c := range []struct {
		name string
		uid  int
		mode os.FileMode
		why  string
	}{
		{"nobody's", 65534, 0o755, "was owned by uid 65534, not by the writer (uid 0)"},
		{"world-writable", 0, 0o777, "was writable by others (mode 0777)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := emptyRoot(t)
			plant(t, r, c.uid, c.mode)
			if err := Write(r, &Description{Version: Version, BootID: bootA}); err == nil || !strings.Contains(err.Error(), "refusing "+r.Path(runDir)) {
				t.Errorf("Write into it: %v", err)
			}
			moved, err := PrepareRunDir(r)
			if err != nil || len(moved) != 1 || !strings.HasPrefix(moved[0], r.Path(runDir)+" "+c.why+": moved aside to "+r.Path("/run/.gpuprep.untrusted-")) {
				t.Fatalf("PrepareRunDir: %q, %v", moved, err)
			}
			for _, d := range []string{runDir, NoticeDir} {
				fi, err := os.Stat(r.Path(d))
				if err != nil || fi.Mode() != os.ModeDir|0o755 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
					t.Errorf("%s afterwards: %v, %v", d, fi, err)
				}
			}
			if _, err := Load(r); !errors.Is(err, ErrMissing) {
				t.Errorf("the planted description is still read: %v", err)
			}
			if n, err := LoadNotice(r, 5); err != nil || len(n.Messages) != 0 {
				t.Errorf("the planted notice is still read: %+v, %v", n, err)
			}
			_, aside, _ := strings.Cut(moved[0], "moved aside to ")
			if b, err := os.ReadFile(aside + "/node-description"); err != nil || string(b) != "planted" {
				t.Errorf("the planted files are not kept aside: %q, %v", b, err)
			}
			if err := Write(r, &Description{Version: Version, BootID: bootA}); err != nil {
				t.Errorf("Write afterwards: %v", err)
			}
			if moved, err := PrepareRunDir(r); err != nil || len(moved) != 0 {
				t.Errorf("again: %q, %v", moved, err)
			}
		})
	}
	t.Run("jobs", func(t *testing.T) {
		r := emptyRoot(t)
		if _, err := PrepareRunDir(r); err != nil {
			t.Fatal(err)
		}
		os.Chown(r.Path(NoticeDir), 1234, 0)
		moved, err := PrepareRunDir(r)
		if err != nil || len(moved) != 1 || !strings.HasPrefix(moved[0], r.Path(NoticeDir)+" was owned by uid 1234") || !strings.Contains(moved[0], r.Path("/run/gpuprep/.jobs.untrusted-")) {
			t.Errorf("PrepareRunDir: %q, %v", moved, err)
		}
	})
	t.Run("umask", func(t *testing.T) {
		r := emptyRoot(t)
		os.MkdirAll(r.Path(runDir), 0o700)
		moved, err := PrepareRunDir(r)
		fi, _ := os.Stat(r.Path(runDir))
		if err != nil || len(moved) != 0 || fi.Mode().Perm() != 0o755 {
			t.Errorf("root's 0700: moved %q, %v, now %v", moved, err, fi.Mode())
		}
	})
	t.Run("symlink", func(t *testing.T) {
		r := emptyRoot(t)
		os.MkdirAll(r.Path("/run"), 0o755)
		os.Symlink(t.TempDir(), r.Path(runDir))
		if _, err := PrepareRunDir(r); err == nil || !strings.Contains(err.Error(), "refusing "+r.Path(runDir)+": it is a symlink") {
			t.Errorf("symlink: %v", err)
		}
	})
}
