package evfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/lib/evidence"
)

// A record written is found again, newest run first; the layout is root's
// 0755 jobs/ in a spool users can search, and root:root 0640 records.
func TestWriteFind(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	d := open(t, state)
	first := write(t, d, record("123", 1000, t0))
	later := record("123", 1000, t0.Add(3600e9))
	later.Warnings = []string{"requeued"}
	second := write(t, d, later)
	write(t, d, record("1234", 1000, t0))
	if first != "123-20250304T050607Z.json" || second != "123-20250304T060607Z.json" {
		t.Errorf("names %s %s", first, second)
	}
	recs, err := d.Find("123")
	if err != nil || len(recs) != 2 || !recs[0].Job.Start.Equal(later.Job.Start) || recs[0].Warnings[0] != "requeued" {
		t.Fatalf("find: %+v, %v", recs, err)
	}
	wantMode(t, state, 0o40711, 0)
	wantMode(t, state+"/jobs", 0o40755, 0)
	wantMode(t, state+"/jobs/"+first, 0o100640, 0)
	if all, errs := d.All(); len(all) != 3 || len(errs) != 0 || all[1].Job.ID != "123" || all[2].Job.ID != "1234" {
		t.Errorf("all: %d records, %v", len(all), errs)
	}
	if recs, err := d.Find("12"); len(recs) != 0 || err != nil {
		t.Errorf("job 12: %v, %v", recs, err)
	}
}

// wantMode checks the mode and owner of path.
func wantMode(t *testing.T, path string, mode uint32, uid uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != mode || st.Uid != uid || st.Gid != 0 {
		t.Errorf("%s: mode %o uid %d gid %d, want %o uid %d gid 0", path, st.Mode, st.Uid, st.Gid, mode, uid)
	}
}

// The epilog's record replaces the prolog's, ACL included; the temporary
// file is gone.
func TestOverwrite(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	d := open(t, state)
	r := record("7", 4242, t0)
	write(t, d, r)
	r.Running = false
	r.End = &evidence.Snapshot{Time: t0.Add(60e9)}
	name := write(t, d, r)
	recs, err := d.Find("7")
	if err != nil || len(recs) != 1 || recs[0].Running || recs[0].End == nil {
		t.Fatalf("find: %+v, %v", recs, err)
	}
	if got := names(t, state+"/jobs"); !slices.Equal(got, []string{name}) {
		t.Errorf("jobs/ holds %v", got)
	}
	wantACL(t, filepath.Join(state, Sub, name), 4242)
}

// The ACL read back names the job's user, read only, with mask r--; so
// does getfacl's output, where getfacl is installed.
func TestACL(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	name := write(t, open(t, state), record("55", 1234, t0))
	path := filepath.Join(state, Sub, name)
	wantACL(t, path, 1234)
	getfacl, err := exec.LookPath("getfacl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("getfacl is not installed (CI=true)")
		}
		t.Log("getfacl is not installed: its check skipped")
		return
	}
	out, err := exec.Command(getfacl, "-n", "-p", path).CombinedOutput()
	if err != nil {
		t.Fatalf("getfacl: %v\n%s", err, out)
	}
	for _, want := range []string{"user::rw-", "user:1234:r--", "group::r--", "mask::r--", "other::---"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("getfacl: no %q in\n%s", want, out)
		}
	}
}

// wantACL checks the access ACL of path: user:<uid>:r-- and mask r--.
func wantACL(t *testing.T, path string, uid uint32) {
	t.Helper()
	buf := make([]byte, 256)
	n, err := unix.Getxattr(path, aclXattr, buf)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	es, err := decodeACL(buf[:n])
	want := []entry{{tagUserObj, 6, undefinedID}, {tagUser, 4, uid}, {tagGroupObj, 4, undefinedID}, {tagMask, 4, undefinedID}, {tagOther, 0, undefinedID}}
	if err != nil || !slices.Equal(es, want) {
		t.Errorf("%s: ACL %+v, %v", path, es, err)
	}
}

// A job of root's or of an unknown user gets no ACL.
func TestNoACL(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	d := open(t, state)
	for _, uid := range []int{0, -1} {
		name := write(t, d, record(fmt.Sprint(10+uid), uid, t0))
		_, err := unix.Getxattr(filepath.Join(state, Sub, name), aclXattr, make([]byte, 64))
		if !errors.Is(err, unix.ENODATA) {
			t.Errorf("uid %d: ACL %v", uid, err)
		}
	}
	if _, err := d.Write(record("9", 1<<32, t0)); err == nil {
		t.Error("uid 2^32 written")
	}
}

// A file system without ACLs: the record is written, and an *ACLError
// says the job's user cannot read it.
func TestNoACLSupport(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	d := open(t, state)
	defer func(f func(int, []byte) error) { setACL = f }(setACL)
	setACL = func(int, []byte) error { return unix.EOPNOTSUPP }
	name, err := d.Write(record("8", 1000, t0))
	var ae *ACLError
	if !errors.As(err, &ae) || name != "8-20250304T050607Z.json" || !strings.HasSuffix(err.Error(), "cannot read it: the filesystem has no ACLs") {
		t.Fatalf("%q, %v", name, err)
	}
	if recs, err := d.Find("8"); len(recs) != 1 || err != nil {
		t.Errorf("find: %v, %v", recs, err)
	}
}

// A newer format, garbage, a record whose name lies: each an error naming
// its file; the good record is still found.
func TestBadRecords(t *testing.T) {
	needRoot(t)
	state := base(t) + "/state"
	d := open(t, state)
	write(t, d, record("5", 1000, t0))
	plantFile(t, state, "5-20240101T000000Z.json", `{"format": 2, "job": {"id": "5"}, "new": {"x": [1]}}`)
	plantFile(t, state, "5-20240102T000000Z.json", `{"format": 1, "job": `)
	plantFile(t, state, "5-20240103T000000Z.json", `{"format": 1, "job": {"id": "6", "start": "2024-01-03T00:00:00Z"}}`)
	recs, err := d.Find("5")
	if len(recs) != 1 || err == nil {
		t.Fatalf("find: %v, %v", recs, err)
	}
	if !errors.Is(err, ErrNewer) {
		t.Errorf("newer format: %v", err)
	}
	for _, want := range []string{
		state + "/jobs/5-20240101T000000Z.json: format 2, written by a newer gpuprep",
		state + "/jobs/5-20240102T000000Z.json: not an evidence record",
		state + "/jobs/5-20240103T000000Z.json: holds job \"6\"",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in %v", want, err)
		}
	}
	if _, err := d.Write(evidence.Record{Format: 2, Job: evidence.Job{ID: "5", Start: t0}}); err == nil {
		t.Error("a newer format written")
	}
}

// OpenReader makes nothing: a missing directory is fs.ErrNotExist.
func TestOpenReaderMissing(t *testing.T) {
	state := base(t) + "/state"
	if _, err := OpenReader(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing spool: %v", err)
	}
	os.Mkdir(state, 0o711)
	if _, err := OpenReader(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing jobs/: %v", err)
	}
	if got := names(t, state); len(got) != 0 {
		t.Errorf("made %v", got)
	}
}
