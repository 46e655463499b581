package evfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/evidence"
	statepkg "gpuprep/lib/state"
)

// readerEnv makes the test binary, run again (as another user), open
// "<state dir>\t<job id>" with OpenReader, Find the job and print what it
// got (readerChild).
const readerEnv = "GPUPREP_TEST_EVFILE_READER"

func TestMain(m *testing.M) {
	if v := os.Getenv(readerEnv); v != "" {
		os.Exit(readerChild(v))
	}
	os.Exit(m.Run())
}

// readerChild prints its uid and groups, then one line per record found
// ("record <id> <start>") and per error ("error: ...").
func readerChild(v string) int {
	dir, id, _ := strings.Cut(v, "\t")
	groups, _ := os.Getgroups()
	fmt.Printf("uid %d gid %d groups %v\n", os.Getuid(), os.Getgid(), groups)
	d, err := OpenReader(dir)
	if err != nil {
		fmt.Println("error:", err)
		return 0
	}
	defer d.Close()
	recs, err := d.Find(id)
	for _, r := range recs {
		fmt.Printf("record %s %s\n", r.Job.ID, r.Job.Start.UTC().Format(StampLayout))
	}
	if err != nil {
		fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if _, err := d.Write(record(id, os.Getuid(), t0)); err == nil {
		fmt.Println("wrote through a reader's Dir")
	}
	return 0
}

// needRoot skips a test that needs root (chown, another user's process).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// base is a folder for a test, 0755 in /tmp so that other users can reach
// what is in it (t.TempDir's are 0700).
func base(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "evfile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// open opens the records' directory of the state dir for root, as the
// hooks do: the spool made searchable by all first.
func open(t *testing.T, state string) *Dir {
	t.Helper()
	sp, err := statepkg.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.AllowTraverse(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// t0 is a job's start.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// record is a running record of job id, user uid, started at start.
func record(id string, uid int, start time.Time) evidence.Record {
	return evidence.Record{
		Format:  evidence.Format,
		Job:     evidence.Job{ID: id, User: "u", UID: uid, Node: "n1", Start: start},
		Running: true,
	}
}

// write writes r into d, failing the test on any error.
func write(t *testing.T, d *Dir, r evidence.Record) string {
	t.Helper()
	name, err := d.Write(r)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// names lists dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// plantFile writes a file into the jobs dir of state, as root's 0640.
func plantFile(t *testing.T, state, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(state, Sub, name), []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}
