package host

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// tempLeft lists the temporary files WriteFile may leave under dir.
func tempLeft(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".gpuprep-tmp-") {
			left = append(left, p)
		}
		return nil
	})
	return left
}

func TestWriteFileFixtureReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	mk := func(p, content string, mode os.FileMode) string {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
		return full
	}
	gov := mk("sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "performance\n", 0o644)
	swap := mk("proc/sys/vm/swappiness", "60\n", 0o600)
	// cpu0/cpufreq is a symlinked directory, as in sysfs; a file that is
	// itself a link is written through too.
	os.MkdirAll(filepath.Join(dir, "sys/devices/system/cpu/cpu0"), 0o755)
	if err := os.Symlink("../cpufreq/policy0", filepath.Join(dir, "sys/devices/system/cpu/cpu0/cpufreq")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("swappiness", filepath.Join(dir, "proc/sys/vm/swap-link")); err != nil {
		t.Fatal(err)
	}
	r := NewRoot(dir)

	// A reader holding the old file sees it whole: the value is swapped in
	// by a rename, never truncated and rewritten in place.
	old, err := os.Open(gov)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	got, err := r.WriteFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "ps")
	if err != nil || got != "ps" {
		t.Fatalf("WriteFile through a linked directory = %q, %v", got, err)
	}
	if b, _ := io.ReadAll(old); string(b) != "performance\n" {
		t.Errorf("the old file was changed in place: %q", b)
	}
	if b, _ := os.ReadFile(gov); string(b) != "ps" {
		t.Errorf("policy0/scaling_governor holds %q, want %q", b, "ps")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sys/devices/system/cpu/cpu0/cpufreq")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("cpu0/cpufreq is no longer a symlink: %v, %v", fi, err)
	}
	// Longer, then shorter than what is there: nothing of the old value
	// is left.
	for _, v := range []string{"balance_performance", "1", ""} {
		if got, err := r.WriteFile("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor", v); err != nil || got != v {
			t.Fatalf("WriteFile(%q) = %q, %v", v, got, err)
		}
		if b, _ := os.ReadFile(gov); string(b) != v {
			t.Fatalf("after writing %q the file holds %q", v, b)
		}
	}
	// Through a link to the file: the link stays, its target changes, and
	// the mode is kept.
	if got, err := r.WriteFile("/proc/sys/vm/swap-link", "10"); err != nil || got != "10" {
		t.Fatalf("WriteFile through a file link = %q, %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "proc/sys/vm/swap-link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("swap-link is no longer a symlink: %v, %v", fi, err)
	}
	if fi, err := os.Stat(swap); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("swappiness mode after WriteFile: %v, %v; want 0600", fi, err)
	}
	if b, _ := os.ReadFile(swap); string(b) != "10" {
		t.Errorf("swappiness holds %q", b)
	}
	if left := tempLeft(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteFileFixtureTempNames(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "enabled")
	os.WriteFile(full, []byte("always [madvise] never\n"), 0o644)
	// Names a killed process of the same pid may have left are skipped
	// over, and left alone.
	next := tmpSeq.Load() + 1
	var stale []string
	for n := next; n < next+3; n++ {
		p := filepath.Join(dir, tmpName("enabled", n))
		os.WriteFile(p, []byte("nev"), 0o644)
		stale = append(stale, p)
	}
	name := tmpName("enabled", next)
	if !strings.HasPrefix(name, ".") || !strings.Contains(name, ".gpuprep-tmp-"+strconv.Itoa(os.Getpid())) {
		t.Fatalf("temporary name %q", name)
	}
	r := NewRoot(dir)
	if got, err := r.WriteFile("/enabled", "never"); err != nil || got != "never" {
		t.Fatalf("WriteFile = %q, %v", got, err)
	}
	if left := tempLeft(t, dir); len(left) != len(stale) {
		t.Errorf("temporary files: %v; want only the stale %v", left, stale)
	}
}

func TestWriteFileFixtureConcurrent(t *testing.T) {
	// CPUs sharing a cpufreq policy write one file from several
	// goroutines: every write succeeds and the file ends holding one
	// value whole.
	dir := t.TempDir()
	full := filepath.Join(dir, "scaling_governor")
	os.WriteFile(full, []byte("powersave\n"), 0o644)
	r := NewRoot(dir)
	vals := []string{"performance", "powersave", "schedutil", "ondemand"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.WriteFile("/scaling_governor", vals[i%len(vals)]); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if b, _ := os.ReadFile(full); !slices.Contains(vals, string(b)) {
		t.Errorf("file holds %q", b)
	}
	if left := tempLeft(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteFileErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proc/sys/vm"), 0o755)
	ro := filepath.Join(dir, "proc/sys/vm/ro")
	os.WriteFile(ro, []byte("1\n"), 0o444)
	r := NewRoot(dir)
	cases := map[string]string{
		"/proc/sys/vm/absent": "proc/sys/vm/absent",
		"/proc/sys/vm":        "proc/sys/vm", // a directory
	}
	if os.Geteuid() != 0 {
		cases["/proc/sys/vm/ro"] = "proc/sys/vm/ro"
	} else {
		t.Log("running as root: a mode 0444 file is writable, not checked")
	}
	for p, name := range cases {
		_, err := r.WriteFile(p, "2")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("WriteFile(%s) = %v; want an error naming %s", p, err, name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "proc/sys/vm/absent")); err == nil {
		t.Error("WriteFile created a file")
	}
	if os.Geteuid() != 0 {
		if b, _ := os.ReadFile(ro); string(b) != "1\n" {
			t.Errorf("read-only file changed: %q", b)
		}
	}
	if left := tempLeft(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestKernelFSDetected(t *testing.T) {
	// Only opened for reading: never write to the real /proc or /sys.
	check := func(p string, want bool) {
		t.Helper()
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Skipf("%s: %v", p, err)
		}
		defer unix.Close(fd)
		kernel, err := onKernelFS(fd)
		if err != nil || kernel != want {
			t.Errorf("onKernelFS(%s) = %v, %v; want %v", p, kernel, err, want)
		}
		plain, err := plainFile(fd)
		if err != nil || plain == want {
			t.Errorf("plainFile(%s) = %v, %v; want %v", p, plain, err, !want)
		}
	}
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	check(f, false)
	check("/proc/self/status", true)
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err == nil {
		check("/sys/devices/system/cpu/online", true)
	}
}
