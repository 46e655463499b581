package state

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A spool Open makes carries its format version, which List leaves out
// and no data file may take.
func TestNewSpoolHasFormat(t *testing.T) {
	sp := newSpool(t)
	fi, err := os.Stat(filepath.Join(sp.Dir(), FormatName))
	if b := readFile(t, filepath.Join(sp.Dir(), FormatName)); err != nil || b != "1\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("format file %q, %v", b, err)
	}
	sp.WriteJSON("node.json", 1)
	if names, _ := sp.List(""); !slices.Equal(names, []string{"node.json"}) {
		t.Errorf("List: %v", names)
	}
	if err := sp.WriteJSON(FormatName, 1); err == nil {
		t.Error("a data file named format accepted")
	}
}

// legacySpool is a spool as release 0.1.0 left it: no format file.
func legacySpool(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "spool")
	os.Mkdir(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "node.json"), []byte(`{"a":1}`), 0o600)
	return dir
}

// A spool without a format file is format 0 and is read as it is; nothing
// is added to it.
func TestMissingFormatIsZero(t *testing.T) {
	dir := legacySpool(t)
	for name, open := range map[string]func(string) (*Spool, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		sp, err := open(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v map[string]int
		if found, err := sp.ReadJSON("node.json", &v); !found || err != nil || v["a"] != 1 {
			t.Errorf("%s: %v %v %v", name, found, err, v)
		}
		sp.Close()
	}
	if _, err := os.Lstat(filepath.Join(dir, FormatName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a format file was added: %v", err)
	}
}

// A spool of a newer format is refused by Open and OpenReadOnly in one
// line naming it, and nothing in it is touched: no lock, no sweep, no
// format file rewritten.
func TestNewerFormatRefused(t *testing.T) {
	dir := legacySpool(t)
	os.WriteFile(filepath.Join(dir, FormatName), []byte("2\n"), 0o600)
	os.WriteFile(filepath.Join(dir, ".node.json.tmp-4194303"), nil, 0o600)
	before := listing(t, dir)
	for name, open := range map[string]func(string) (*Spool, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		_, err := open(dir)
		if !errors.Is(err, ErrNewer) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "state dir "+dir+": format 2, written by a newer gpuprep") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if after := listing(t, dir); after != before {
		t.Errorf("the spool changed:\n%s\nnow\n%s", before, after)
	}
}

// listing is every file of dir with its mode, time and content.
func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range ents {
		fi, _ := e.Info()
		b.WriteString(e.Name() + " " + fi.Mode().String() + " " + fi.ModTime().String() + " " + readFile(t, filepath.Join(dir, e.Name())) + "\n")
	}
	fi, _ := os.Stat(dir)
	return b.String() + fi.Mode().String() + " " + fi.ModTime().String()
}

// Format says which format the spool was found in: 0 for release 0.1.0's,
// Format for one made now.
func TestFormatFound(t *testing.T) {
	sp, err := Open(legacySpool(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.Format() != 0 {
		t.Errorf("0.1.0's spool: Format() = %d, want 0", sp.Format())
	}
	made, err := Open(filepath.Join(t.TempDir(), "new"))
	if err != nil {
		t.Fatal(err)
	}
	defer made.Close()
	if made.Format() != Format {
		t.Errorf("a new spool: Format() = %d, want %d", made.Format(), Format)
	}
}
