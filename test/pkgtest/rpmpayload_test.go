package pkgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRPMPayloadRelative: the rpm's payload names its files as rpmbuild's
// do (./usr/sbin/...), so `rpm2cpio x.rpm | cpio -idm`, the usual way to
// look inside an rpm, writes into the current directory, never over the
// real root.
func TestRPMPayloadRelative(t *testing.T) {
	t.Parallel()
	need(t, "rpm2cpio", "cpio")
	_, rpm := packages(t)
	list := exec.Command("sh", "-c", `rpm2cpio "$1" | cpio -it --quiet`, "sh", rpm)
	out, err := list.Output()
	if err != nil {
		t.Fatalf("rpm2cpio | cpio -it: %v", err)
	}
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(name, "./") {
			t.Errorf("the rpm's payload names %q: not relative (./...)", name)
		}
	}
	dir := t.TempDir()
	unpack := exec.Command("sh", "-c", `rpm2cpio "$1" | cpio -idm --quiet`, "sh", rpm)
	unpack.Dir = dir
	if b, err := unpack.CombinedOutput(); err != nil {
		t.Fatalf("rpm2cpio | cpio -idm: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/sbin/gpuprep-prolog")); err != nil {
		t.Errorf("rpm2cpio | cpio -idm put no usr/sbin/gpuprep-prolog in its directory: %v", err)
	}
}
