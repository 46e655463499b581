package state

import (
	"os"
	"path/filepath"
	"testing"

	"gpuprep/internal/testroot"
)

func TestOpenCreatesWithModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "spool")
	sp, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.Dir() != dir {
		t.Fatalf("Dir() = %q, want %q", sp.Dir(), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool mode %v, want 0700", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(dir)); fi.Mode().Perm() != 0o755 {
		t.Fatalf("parent mode %v, want 0755", fi.Mode().Perm())
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	again, err := Open(dir) // an existing spool opens as is
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

func TestOpenRefusesSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "spool")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, err := Open(link)
	wantErr(t, err, link, "symlink")
	// A dangling link is refused too, not replaced by a new directory.
	dangling := filepath.Join(base, "dangling")
	os.Symlink(filepath.Join(base, "nowhere"), dangling)
	_, err = Open(dangling)
	wantErr(t, err, dangling, "symlink")
	if _, err := os.Stat(filepath.Join(base, "nowhere")); !os.IsNotExist(err) {
		t.Fatal("Open created the dangling link's target")
	}
}

func TestOpenRefusesWritableByOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		dir := filepath.Join(t.TempDir(), "spool")
		os.Mkdir(dir, 0o700)
		os.Chmod(dir, mode)
		_, err := Open(dir)
		wantErr(t, err, dir, "writable by group or others")
	}
	dir := filepath.Join(t.TempDir(), "spool") // readable by others is fine
	os.Mkdir(dir, 0o700)
	os.Chmod(dir, 0o755)
	sp, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sp.Close()
}

func TestOpenRefusesNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "spool")
	os.WriteFile(f, nil, 0o600)
	_, err := Open(f)
	wantErr(t, err, f)
}

func TestOpenRefusesForeignOwner(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	dir := filepath.Join(t.TempDir(), "spool")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	wantErr(t, err, dir, "owned by uid 4242", "not uid 0")
}

func TestOpenChecksFoldersAbove(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(parent, 0o755)
	os.Chmod(parent, 0o777) // anyone could rename the spool away
	dir := filepath.Join(parent, "spool")
	_, err := Open(dir)
	wantErr(t, err, dir, parent, "without the sticky bit")

	os.Chmod(parent, 0o777|os.ModeSticky) // like /tmp: fine
	sp, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sp.Close()

	if os.Geteuid() == 0 {
		os.Chmod(parent, 0o755)
		os.Chown(parent, 4242, 4242) // its owner could replace the spool
		_, err = Open(dir)
		wantErr(t, err, dir, parent, "owned by uid 4242")
	}
}

// TestSwappedDirectory: once open, the spool writes into the directory it
// opened, even if the path is renamed and replaced (by a symlink or a new
// directory) afterwards.
func TestSwappedDirectory(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "spool")
	sp, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	moved := filepath.Join(base, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	decoy := filepath.Join(base, "decoy")
	os.Mkdir(decoy, 0o700)
	os.Symlink(decoy, dir)
	if err := sp.WriteJSON("baseline.json", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := sp.AppendLine("drift.jsonl", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(moved, "baseline.json")); err != nil {
		t.Fatalf("write did not land in the opened directory: %v", err)
	}
	if ents, _ := os.ReadDir(decoy); len(ents) != 0 {
		t.Fatalf("write redirected into the decoy: %v", ents)
	}
}

func TestBadNames(t *testing.T) {
	sp := newSpool(t)
	var v any
	for _, n := range []string{"", "a/b", "../x", "..", ".", "x..y", ".hidden", "lock", "a\x00b", "a\nb"} {
		if _, err := sp.ReadJSON(n, &v); err == nil {
			t.Errorf("ReadJSON(%q) accepted", n)
		}
		if err := sp.WriteJSON(n, 1); err == nil {
			t.Errorf("WriteJSON(%q) accepted", n)
		}
		if err := sp.AppendLine(n, []byte("x")); err == nil {
			t.Errorf("AppendLine(%q) accepted", n)
		}
		if err := sp.Remove(n); err == nil {
			t.Errorf("Remove(%q) accepted", n)
		}
	}
}
