package nodedesc

import (
	"os"
	"reflect"
	"strings"
	"testing"
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
