package pkgtest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReproducible: a second `make package` of the same tree gives
// byte-identical packages (SOURCE_DATE_EPOCH from the commit, the rpm's
// build host fixed), so anyone can check a published package against
// its commit.
func TestReproducible(t *testing.T) {
	t.Parallel()
	deb, rpm := packages(t)
	dir := t.TempDir()
	cmd := exec.Command("make", "-C", pkgs.repo, "package", "DIST="+dir+"/dist", "PKGBUILD="+dir+"/pkg")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second make package: %v\n%s", err, b)
	}
	for _, first := range []string{deb, rpm} {
		second := filepath.Join(dir, "dist", filepath.Base(first))
		if !bytes.Equal(mustRead(t, first), mustRead(t, second)) {
			out, _, _ := runErr("cmp", first, second)
			t.Errorf("%s differs between two builds of one tree: %s", filepath.Base(first), out)
		}
	}
}
