package host

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// flakyReader returns its data a few bytes at a time with EAGAIN and EINTR
// in between, as sysfs attributes backed by slow drivers can.
type flakyReader struct {
	data  string
	steps int
	fails int // EAGAINs to return in a row each time
}

func (f *flakyReader) Read(p []byte) (int, error) {
	f.steps++
	if f.steps%2 == 0 && f.fails > 0 {
		f.fails--
		if f.fails%2 == 0 {
			return 0, syscall.EINTR
		}
		return 0, syscall.EAGAIN
	}
	if f.data == "" {
		return 0, io.EOF
	}
	n := copy(p, f.data[:min(3, len(f.data))])
	f.data = f.data[n:]
	return n, nil
}

func TestReadAllShortReadsAndEAGAIN(t *testing.T) {
	b, err := readAll(&flakyReader{data: "performance\n", fails: 4})
	if err != nil || string(b) != "performance\n" {
		t.Fatalf("readAll = %q, %v", b, err)
	}
}

type alwaysEAGAIN struct{}

func (alwaysEAGAIN) Read([]byte) (int, error) { return 0, syscall.EAGAIN }

func TestReadAllGivesUpOnPersistentEAGAIN(t *testing.T) {
	if _, err := readAll(alwaysEAGAIN{}); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("want EAGAIN after retries, got %v", err)
	}
}

func TestRootedReads(t *testing.T) {
	dir := t.TempDir()
	mk := func(p, content string) {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(content), 0o644)
	}
	mk("sys/bus/pci/devices/x/numa_node", "-1\n")
	mk("sys/devices/pci0000:00/0000:00:06.0/class", "0x030200\n")
	mk("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
	os.Symlink("../../../devices/pci0000:00/0000:00:06.0", filepath.Join(dir, "sys/bus/pci/devices/0000:00:06.0"))
	os.MkdirAll(filepath.Join(dir, "sys/class/net"), 0o755)
	// An absolute link as a capture may hold: resolved inside the root.
	os.Symlink(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:06.0"), filepath.Join(dir, "sys/class/net/abs"))
	r := NewRoot(dir)

	if v, err := r.ReadInt("/sys/bus/pci/devices/x/numa_node"); err != nil || v != -1 {
		t.Errorf("ReadInt = %d, %v", v, err)
	}
	if v, err := r.ReadHex("/sys/bus/pci/devices/0000:00:06.0/class"); err != nil || v != 0x030200 {
		t.Errorf("ReadHex through a link = %x, %v", v, err)
	}
	if _, err := r.ReadInt("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil || !strings.Contains(err.Error(), "transparent_hugepage/enabled") {
		t.Errorf("ReadInt of text must name the file: %v", err)
	}
	for link, want := range map[string]string{
		"/sys/bus/pci/devices/0000:00:06.0":       "/sys/devices/pci0000:00/0000:00:06.0",
		"/sys/bus/pci/devices/0000:00:06.0/class": "/sys/devices/pci0000:00/0000:00:06.0/class",
		"/sys/class/net/abs":                      "/sys/devices/pci0000:00/0000:00:06.0",
	} {
		if got, err := r.Resolve(link); err != nil || got != want {
			t.Errorf("Resolve(%s) = %q, %v; want %q", link, got, err, want)
		}
	}
	// ".." cannot climb out of the root.
	if got := r.Path("/../../etc/passwd"); got != filepath.Join(dir, "etc/passwd") {
		t.Errorf("Path escapes the root: %s", got)
	}
	got, err := r.Glob("/sys/bus/pci/devices/*")
	if err != nil || len(got) != 2 || got[0] != "/sys/bus/pci/devices/0000:00:06.0" {
		t.Errorf("Glob = %v, %v", got, err)
	}
	if !NewRoot("").IsHost() || r.IsHost() {
		t.Error("IsHost")
	}
}

func TestWriteFileReadsBack(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proc/sys/vm"), 0o755)
	os.WriteFile(filepath.Join(dir, "proc/sys/vm/swappiness"), []byte("60\n"), 0o644)
	r := NewRoot(dir)
	got, err := r.WriteFile("/proc/sys/vm/swappiness", "10")
	if err != nil || got != "10" {
		t.Fatalf("WriteFile = %q, %v", got, err)
	}
	if _, err := r.WriteFile("/proc/sys/vm/absent", "1"); err == nil {
		t.Error("WriteFile must not create files")
	}
}
