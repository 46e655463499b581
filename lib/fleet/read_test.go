package fleet

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/drift"
)

// line is one drift record as the epilog writes it, minute min after t0.
func line(min int, node, knob string) string {
	n := ""
	if node != "" {
		n = `"node":"` + node + `",`
	}
	return `{"time":"` + t0.Add(time.Duration(min)*time.Minute).Format(time.RFC3339) + `",` + n + `"job":"7","knob":"` + knob + `","scope":"node","expected":"a","found":"b","kind":"drift"}` + "\n"
}

// write creates path (and its directories) holding content.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files is "path=node" of each file, in order.
func files(ffs []File) []string {
	var out []string
	for _, f := range ffs {
		out = append(out, f.Path+"="+f.Node)
	}
	return out
}

// Each shape of --from PATH names its drift files and their nodes.
func TestFleetFilesShapes(t *testing.T) {
	d := t.TempDir()
	// A directory of node files, with what a copy leaves around them.
	write(t, d+"/flat/gpu01.jsonl", line(0, "gpu01", "k"))
	write(t, d+"/flat/gpu02.drift.jsonl", line(0, "gpu02", "k"))
	write(t, d+"/flat/.gpu03.jsonl.Xa81c", line(0, "gpu03", "k")) // rsync's temporary file
	write(t, d+"/flat/._gpu01.jsonl", "\x00\x05\x16\x07")         // a Mac's copy's resource fork
	write(t, d+"/flat/README", "not drift")
	write(t, d+"/flat/gpu04.prom", "not drift")
	os.MkdirAll(d+"/flat/lost+found", 0o755)
	// A directory of node directories, each a copy of a spool.
	write(t, d+"/tree/gpu05/drift.jsonl", line(0, "gpu05", "k"))
	write(t, d+"/tree/gpu05/node.json", "{}")
	write(t, d+"/tree/gpu06/drift.jsonl", line(0, "gpu06", "k"))
	write(t, d+"/tree/gpu10.jsonl", line(0, "gpu10", "k"))
	os.MkdirAll(d+"/tree/gpu08", 0o755) // a node not copied yet
	write(t, d+"/tree/gpu09/drift.jsonl.tmp", "")

	for _, c := range []struct {
		path string
		want []string
	}{
		{d + "/flat/gpu01.jsonl", []string{d + "/flat/gpu01.jsonl=gpu01"}},
		{d + "/flat/gpu02.drift.jsonl", []string{d + "/flat/gpu02.drift.jsonl=gpu02"}},
		{d + "/flat/README", []string{d + "/flat/README=README"}}, // named: read whatever its name
		{d + "/flat", []string{d + "/flat/gpu01.jsonl=gpu01", d + "/flat/gpu02.drift.jsonl=gpu02"}},
		{d + "/flat/", []string{d + "/flat/gpu01.jsonl=gpu01", d + "/flat/gpu02.drift.jsonl=gpu02"}},
		{d + "/tree/gpu05/drift.jsonl", []string{d + "/tree/gpu05/drift.jsonl=gpu05"}},
		{d + "/tree/gpu05", []string{d + "/tree/gpu05/drift.jsonl=gpu05"}},
		{d + "/tree/gpu05/.", []string{d + "/tree/gpu05/drift.jsonl=gpu05"}},
		{d + "/tree", []string{d + "/tree/gpu05/drift.jsonl=gpu05", d + "/tree/gpu06/drift.jsonl=gpu06", d + "/tree/gpu10.jsonl=gpu10"}},
	} {
		got, err := Files(c.path)
		if err != nil || !reflect.DeepEqual(files(got), c.want) {
			t.Errorf("Files(%s) = %q, %v; want %q", c.path, files(got), err, c.want)
		}
	}

	// A relative drift.jsonl is its directory's node.
	t.Chdir(d + "/tree/gpu06")
	if got, err := Files("drift.jsonl"); err != nil || !reflect.DeepEqual(files(got), []string{"drift.jsonl=gpu06"}) {
		t.Errorf("Files(drift.jsonl) in gpu06 = %q, %v", files(got), err)
	}
}

// A path that does not exist, a directory with no drift file, a device:
// each is an error naming the path (and the layout where it helps).
func TestFleetBadPaths(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(d+"/empty", 0o755)
	write(t, d+"/other/notes.txt", "x")
	os.MkdirAll(d+"/other/gpu01", 0o755)
	for _, c := range []struct {
		path, want string
		notExist   bool
	}{
		{d + "/missing", d + "/missing: no such file or directory", true},
		{d + "/missing.jsonl", d + "/missing.jsonl: no such file or directory", true},
		{d + "/empty", d + "/empty: no drift file in it (want <node>.jsonl, <node>.drift.jsonl, <node>/drift.jsonl or drift.jsonl)", false},
		{d + "/other", d + "/other: no drift file in it", false},
		{"/dev/null", "/dev/null: not a regular file or directory", false},
		{"", ": empty path", false},
	} {
		fl, err := Read(context.Background(), []string{d + "/other/notes.txt", c.path}, time.Time{})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || errors.Is(err, fs.ErrNotExist) != c.notExist || fl != nil {
			t.Errorf("Read(%q) = %v, %v; want an error starting %q", c.path, fl, err, c.want)
		}
	}
	// A file under the directory that is missing or cannot be read names
	// both.
	os.MkdirAll(d+"/links", 0o755)
	os.Symlink(d+"/nowhere/gpu05.jsonl", d+"/links/gpu05.jsonl")
	os.Symlink(d+"/nowhere/notes", d+"/links/notes")
	write(t, d+"/links/gpu06.jsonl", line(0, "gpu06", "k"))
	_, err := Read(context.Background(), []string{d + "/links"}, time.Time{})
	if want := d + "/links: " + d + "/links/gpu05.jsonl: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("a dangling <node>.jsonl: %v, want %s", err, want)
	}
	os.Remove(d + "/links/gpu05.jsonl")
	if fl, err := Read(context.Background(), []string{d + "/links"}, time.Time{}); err != nil || fl.Report(0).Totals.Files != 1 {
		t.Errorf("a dangling link named like no drift file is left out: %v", err)
	}
	if os.Geteuid() != 0 { // root reads any file
		write(t, d+"/locked/gpu01.jsonl", line(0, "gpu01", "k"))
		os.Chmod(d+"/locked/gpu01.jsonl", 0)
		_, err := Read(context.Background(), []string{d + "/locked"}, time.Time{})
		if want := d + "/locked: " + d + "/locked/gpu01.jsonl: permission denied"; err == nil || err.Error() != want {
			t.Errorf("unreadable file: %v, want %s", err, want)
		}
	}
}

// Garbage, a huge line, a torn last line and an empty file cost only
// themselves, counted per file; a file named twice is read once; --since
// keeps the newer records.
func TestReadFleetRobust(t *testing.T) {
	d := t.TempDir()
	write(t, d+"/fleet/gpu01.jsonl", line(0, "gpu01", "cpu_governor")+"garbage\x00\xff\n\n"+
		`{"knob":"`+strings.Repeat("x", drift.MaxLine+10)+`"}`+"\n"+line(10, "gpu01", "cpu_governor")+`{"time":"2026-03-01T10:11:00Z","kn`)
	write(t, d+"/fleet/gpu02.jsonl", "")
	write(t, d+"/fleet/gpu03/drift.jsonl", line(5, "", "thp_enabled")+line(6, "gpu03", "thp_enabled"))
	fl, err := Read(context.Background(), []string{d + "/fleet", d + "/fleet/gpu01.jsonl", d + "/fleet/../fleet/gpu02.jsonl"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	rep := fl.Report(0)
	type file struct {
		path, node    string
		records       int
		garbage, torn int
		lines         []int
	}
	var got []file
	for _, f := range rep.Files {
		got = append(got, file{strings.TrimPrefix(f.Path, d+"/"), f.Node, f.Records, f.Skipped.Garbage, f.Skipped.Torn, f.Skipped.Lines})
	}
	want := []file{
		{"fleet/gpu01.jsonl", "gpu01", 2, 2, 1, []int{2, 4, 6}},
		{"fleet/gpu02.jsonl", "gpu02", 0, 0, 0, nil},
		{"fleet/gpu03/drift.jsonl", "gpu03", 2, 0, 0, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("files:\n got %+v\nwant %+v", got, want)
	}
	if rep.Totals.Records != 4 || rep.Totals.Skipped != 3 || rep.Totals.Nodes != 2 {
		t.Errorf("totals %+v", rep.Totals)
	}
	if n := rep.Knobs[1]; n.Knob != "thp_enabled" || n.Hostlist != "gpu03" || n.Records != 2 {
		t.Errorf("a record without a node is its directory's: %+v", n)
	}
	if s := rep.Files[0].Skipped.In(rep.Files[0].Path); !strings.Contains(s, "2 unreadable lines and a torn last line in "+d+"/fleet/gpu01.jsonl (lines 2, 4, 6)") {
		t.Errorf("note %q", s)
	}

	fl, err = Read(context.Background(), []string{d + "/fleet"}, t0.Add(6*time.Minute))
	if err != nil || fl.Report(0).Totals.Records != 2 {
		t.Errorf("--since: %+v %v", fl.Report(0).Totals, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, []string{d + "/fleet"}, time.Time{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
}

// drift.ReadFrom is Read's parser on any reader.
func TestReadFrom(t *testing.T) {
	recs, sk, err := drift.ReadFrom(strings.NewReader(line(0, "n1", "a")+"x\n"+line(1, "n1", "b")), time.Time{})
	if err != nil || len(recs) != 2 || recs[1].Knob != "b" || sk.Garbage != 1 || !reflect.DeepEqual(sk.Lines, []int{2}) {
		t.Errorf("%+v %+v %v", recs, sk, err)
	}
	if recs, sk, err := drift.ReadFrom(strings.NewReader(""), time.Time{}); recs != nil || sk.Total() != 0 || err != nil {
		t.Errorf("empty: %+v %+v %v", recs, sk, err)
	}
	if _, _, err := drift.ReadFrom(errReader{}, time.Time{}); err == nil || err.Error() != "disk on fire" {
		t.Errorf("read error: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
