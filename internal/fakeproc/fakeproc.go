// Package fakeproc writes processes into fixture roots as /proc shows
// them, for tests of code that tells Slurm's daemons and jobs apart by
// their processes (lib/slurm, lib/isolate, lib/hook), and runs a test's
// code without root's power over file permissions.
package fakeproc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Add gives the fixture root dir a process as /proc shows it: exe, a link
// to the program (an empty file made at exe under the root), status with
// its real user uid, cmdline (blanks become NULs), comm, and cgroup (the
// lines of /proc/<pid>/cgroup, as given).
func Add(t testing.TB, dir string, pid, uid int, exe, cmdline, cgroup string) {
	t.Helper()
	proc := filepath.Join(dir, "proc", strconv.Itoa(pid))
	prog := filepath.Join(dir, exe)
	for _, d := range []string{proc, filepath.Dir(prog)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(prog, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(proc, prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(proc, "exe")); err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(exe)
	for name, c := range map[string]string{
		"status":  fmt.Sprintf("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n", comm, uid, uid, uid, uid),
		"cmdline": strings.ReplaceAll(cmdline, " ", "\x00") + "\x00",
		"comm":    comm + "\n",
		"cgroup":  cgroup,
	} {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// WithoutDACOverride runs f on a thread of its own whose effective
// capabilities lack CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that a
// test running as root meets file permissions as any other process does
// (a folder of mode 0: EACCES). The thread ends with f.
func WithoutDACOverride(t testing.TB, f func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		f()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatalf("dropping capabilities: %v", err)
	}
}
