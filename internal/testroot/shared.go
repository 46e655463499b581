package testroot

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Shared returns an unpacked copy of test/roots/<name>.tar.gz that tests
// must only read. Unpacking a large root writes ~30,000 files, so one copy
// per archive content is kept under the system temp folder
// (gpuprep-roots/<sha256>) and reused by every test and test binary; it is
// published by an atomic rename once complete. Tests that write into a root
// (garbage in sysfs, knobs being tuned) use Unpack.
func Shared(t testing.TB, name string) string {
	t.Helper()
	f := openArchive(t, name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(os.TempDir(), "gpuprep-roots")
	dir := filepath.Join(cache, name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		return dir
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, name+".partial-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := Extract(f, tmp); err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("testroot: fixture %q: %v", name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary published it first.
		os.RemoveAll(tmp)
		if fi, serr := os.Lstat(dir); serr != nil || !fi.IsDir() {
			t.Fatalf("testroot: publish %s: %v", dir, err)
		}
	}
	return dir
}
