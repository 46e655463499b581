// Package fulldisk gives tests a file system they can fill to the last
// byte: a small tmpfs of their own (ENOSPC on demand, without touching the
// machine's disks). Mounting needs root: without it the test is skipped,
// and with CI=true a mount that fails is a failure.
package fulldisk

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a 256 KiB tmpfs (mode 0700) on a new temporary folder of
// the test and returns it; it is unmounted when the test ends.
func Mount(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mounting a tmpfs needs root, and CI runs as root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v %s", err, out)
		}
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}

// Fill fills dir's file system to the last byte with one file, whose path
// it returns (remove it to free the space).
func Fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, size := range []int{4096, 1} { // pages, then any last bytes
		for {
			if _, err := f.Write(buf[:size]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return p
}
