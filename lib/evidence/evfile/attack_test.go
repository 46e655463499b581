package evfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
)

// victim is a file of root's outside the spool that links point at.
func victim(t *testing.T) string {
	t.Helper()
	v := filepath.Join(base(t), "passwd")
	if err := os.WriteFile(v, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

// wantVictim says the victim is untouched and alone in its folder.
func wantVictim(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "root:x:0:0\n" {
		t.Errorf("%s: %q, %v", v, b, err)
	}
	if got := names(t, filepath.Dir(v)); len(got) != 1 {
		t.Errorf("%s holds %v", filepath.Dir(v), got)
	}
}

// A symlink, a directory of another user's or one others can write, in
// the place of the spool or of jobs/: refused, naming it, nothing written.
func TestOpenRefuses(t *testing.T) {
	needRoot(t)
	v := victim(t)
	cases := map[string]func(state string) string{
		"jobs symlink": func(s string) string {
			os.Mkdir(s, 0o700)
			os.Symlink(filepath.Dir(v), s+"/jobs")
			return "refusing " + s + "/jobs: it is a symlink"
		},
		"jobs 65534": func(s string) string {
			os.MkdirAll(s+"/jobs", 0o755)
			os.Chown(s+"/jobs", 65534, 65534)
			return "refusing " + s + "/jobs: owned by uid 65534, not root"
		},
		"jobs 0777": func(s string) string {
			os.MkdirAll(s+"/jobs", 0o755)
			os.Chmod(s+"/jobs", 0o777)
			return "refusing " + s + "/jobs: writable by group or others (mode 0777)"
		},
		"spool symlink": func(s string) string { os.Symlink(filepath.Dir(v), s); return s + " is a symlink" },
		"spool 65534": func(s string) string {
			os.Mkdir(s, 0o700)
			os.Chown(s, 65534, 65534)
			return s + " is owned by uid 65534"
		},
	}
	for what, plant := range cases {
		state := base(t) + "/state"
		want := plant(state)
		d, err := Open(state)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", what, err)
			d.Close()
		}
		if fi, err := os.Lstat(state + "/jobs"); err == nil && fi.IsDir() && len(names(t, state+"/jobs")) > 0 {
			t.Errorf("%s: written %v", what, names(t, state+"/jobs"))
		}
		if _, err := OpenReader(state); err == nil {
			t.Errorf("%s: a reader believes it", what)
		}
	}
	wantVictim(t, v)
	if fi, _ := os.Stat(filepath.Dir(v)); fi.Mode().Perm() != 0o755 {
		t.Errorf("victim folder mode %v", fi.Mode())
	}
}

// A symlink in a record's place is replaced, never written through; one
// in another run's place is skipped by Find, with an error naming it, and
// so is a FIFO (without hanging).
func TestSymlinkInJobs(t *testing.T) {
	needRoot(t)
	v := victim(t)
	state := base(t) + "/state"
	d := open(t, state)
	os.Symlink(v, state+"/jobs/77-20250304T050607Z.json")
	os.Symlink(v, state+"/jobs/77-20240101T000000Z.json")
	unix.Mkfifo(state+"/jobs/77-20240102T000000Z.json", 0o600)
	name := write(t, d, record("77", 1000, t0))
	if fi, err := os.Lstat(state + "/jobs/" + name); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s: %v, %v", name, fi, err)
	}
	recs, err := d.Find("77")
	if len(recs) != 1 || !errors.Is(err, dirfd.ErrSymlink) || !errors.Is(err, dirfd.ErrNotRegular) ||
		!strings.Contains(err.Error(), state+"/jobs/77-20240101T000000Z.json") {
		t.Errorf("find: %d records, %v", len(recs), err)
	}
	wantVictim(t, v)
}

// A job id that is not a number is refused before any path is made of
// it, naming the value; nothing is created anywhere.
func TestBadJobID(t *testing.T) {
	needRoot(t)
	dir := base(t)
	d := open(t, dir+"/state")
	for _, id := range []string{"../../etc/x", "12a", "", "0", "012", "-1", "1 2", "1/2", "18446744073709551616", "5_1", "5+0"} {
		_, err := d.Write(record(id, 1000, t0))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("job id %q", id)) {
			t.Errorf("write %q: %v", id, err)
		}
		if _, err := d.Find(id); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
			t.Errorf("find %q: %v", id, err)
		}
	}
	if got := names(t, dir+"/state/jobs"); len(got) != 0 {
		t.Errorf("jobs/ holds %v", got)
	}
	if got := names(t, dir); len(got) != 1 {
		t.Errorf("%s holds %v", dir, got)
	}
	if err := CheckJobID("18446744073709551615"); err != nil {
		t.Error(err)
	}
}

// The job's user reads their record as themselves (uid 65534, no group of
// root's) through OpenReader and Find, and not a record of uid 65533's,
// nor writes through a reader's Dir.
func TestUserReads(t *testing.T) {
	needRoot(t)
	dir := base(t)
	d := open(t, dir+"/state")
	write(t, d, record("100", 65534, t0))
	write(t, d, record("100", 65534, t0.Add(7200e9)))
	write(t, d, record("200", 65533, t0))
	bin := dir + "/evfile.test"
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal("copying the test binary:", err)
	}
	run := func(id string) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), readerEnv+"="+dir+"/state\t"+id)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("reader: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run("100")
	want := "uid 65534 gid 65534 groups []\nrecord 100 20250304T070607Z\nrecord 100 20250304T050607Z\n"
	if !strings.HasPrefix(out, want) || strings.Contains(out, "error") {
		t.Errorf("uid 65534 reading its job:\n%s", out)
	}
	if strings.Contains(out, "wrote through") {
		t.Errorf("a reader's Dir wrote:\n%s", out)
	}
	out = run("200")
	if strings.Contains(out, "record") || !strings.Contains(out, "200-20250304T050607Z.json: permission denied") {
		t.Errorf("uid 65534 reading uid 65533's job:\n%s", out)
	}
}
