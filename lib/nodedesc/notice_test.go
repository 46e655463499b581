package nodedesc

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"gpuprep/lib/rundir"
)

func TestNotices(t *testing.T) {
	r := emptyRoot(t)
	if err := RemoveNotice(r, 9); err != nil { // no directory yet
		t.Fatalf("remove with no directory: %v", err)
	}
	if n, err := LoadNotice(r, 9); err != nil || n.Job != 0 || n.Messages != nil {
		t.Fatalf("no notice: %+v, %v", n, err)
	}
	want := Notice{Job: 9, Messages: []string{`profile "fast" cannot be applied on this node; using the default profile "default"`}}
	if err := WriteNotice(r, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(r.Path(NoticeDir + "/9"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("notice file: %v, %v", fi, err)
	}
	if got, err := LoadNotice(r, 9); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, %v", got, err)
	}
	if got, err := LoadNotice(r, 10); err != nil || len(got.Messages) != 0 {
		t.Errorf("another job's notice: %+v, %v", got, err)
	}
	// A requeued job with nothing to say now: the old notice goes.
	if err := WriteNotice(r, Notice{Job: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Path(NoticeDir + "/9")); !os.IsNotExist(err) {
		t.Errorf("empty notice left a file: %v", err)
	}
	for range 2 {
		if err := RemoveNotice(r, 9); err != nil {
			t.Errorf("remove again: %v", err)
		}
	}
	// A file naming another job is not this job's notice.
	if err := os.WriteFile(r.Path(NoticeDir+"/11"), []byte("job 12\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNotice(r, 11); err == nil || !strings.Contains(err.Error(), "jobs/11") {
		t.Errorf("mismatched job: %v", err)
	}
}

// ForgetNotices removes the notices of the jobs keep lets go, and leaves
// the others and any file that is not a job's notice; with no jobs
// directory it does nothing.
func TestForgetNotices(t *testing.T) {
	r := emptyRoot(t)
	rd, err := rundir.Open(r, rundir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if gone, err := ForgetNotices(rd, func(uint64) bool { return false }); err != nil || gone != nil {
		t.Fatalf("no jobs directory: %v, %v", gone, err)
	}
	for _, job := range []uint64{3, 4, 5} {
		if err := WriteNoticeIn(rd, r, Notice{Job: job, Messages: []string{"m"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"007", "readme", ".4.tmp-1"} {
		if err := os.WriteFile(r.Path(NoticeDir+"/"+other), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := ForgetNotices(rd, func(job uint64) bool { return job == 4 })
	if err != nil || !reflect.DeepEqual(gone, []uint64{3, 5}) {
		t.Errorf("gone %v, %v; want [3 5]", gone, err)
	}
	ents, _ := os.ReadDir(r.Path(NoticeDir))
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != ".4.tmp-1 007 4 readme" {
		t.Errorf("left %q", left)
	}
}
