package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// kernel wraps a fixture root to play /proc/irq: a write to the
// smp_affinity_list of an IRQ in refuse fails with that errno, as the
// kernel's write does for a managed IRQ; keep makes the kernel keep
// another list; any other write also sets effective_affinity_list to the
// first CPU written, as x86's vector domain does.
type kernel struct {
	host.Root
	refuse map[int]error
	keep   map[int]string
	writes []string
}

func (k *kernel) WriteFile(p, v string) (string, error) {
	k.writes = append(k.writes, p+"="+v)
	var irq int
	if _, err := fmt.Sscanf(p, "/proc/irq/%d/smp_affinity_list", &irq); err != nil {
		return k.Root.WriteFile(p, v)
	}
	if e := k.refuse[irq]; e != nil {
		return "", fmt.Errorf("write %q to %s: %w", v, p, e)
	}
	if kept, ok := k.keep[irq]; ok {
		v = kept
	}
	got, err := k.Root.WriteFile(p, v)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(strings.Split(v, ",")[0], "-")
	if _, err := k.Root.WriteFile(EffectivePath(irq), first); err != nil {
		return "", err
	}
	return got, nil
}

// TestSetAffinity applies a plan's moves to the fixture node.
func TestSetAffinity(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	k := &kernel{Root: r, refuse: map[int]error{31: syscall.EIO, 32: syscall.EPERM}}
	s := Setter{Root: r, Files: k}
	for _, tc := range []struct {
		irq     int
		want    string
		refused bool
		file    string // smp_affinity_list afterwards
		eff     string
	}{
		{60, "0-1", false, "0-1", "0"},
		{61, "8-9", false, "8-9", "8"},
		{16, "0-1,8-9", false, "0-1,8-9", "0"},
		{30, "0-1,8-9", true, "0-5", "1"},    // read-only (Linux 6.12+): not even written
		{31, "0-1,8-9", true, "6-10", "9"},   // EIO (before 6.12)
		{32, "0-1,8-9", true, "11-15", "14"}, // EPERM (6.12+)
	} {
		res, err := s.Set(tc.irq, cpuset.MustParse(tc.want))
		if err != nil {
			t.Fatalf("IRQ %d: %v", tc.irq, err)
		}
		if res.Refused != tc.refused || res.Mismatch != "" || res.IRQ != tc.irq || res.Want.String() != tc.want {
			t.Errorf("IRQ %d: %+v", tc.irq, res)
		}
		if !tc.refused && (res.Got.String() != tc.want || res.Effective.String() != tc.eff) {
			t.Errorf("IRQ %d: read back %s, effective %s", tc.irq, res.Got, res.Effective)
		}
		if got := n.read(AffinityPath(tc.irq)); got != tc.file {
			t.Errorf("IRQ %d: smp_affinity_list holds %q; want %q", tc.irq, got, tc.file)
		}
		if got := n.read(EffectivePath(tc.irq)); got != tc.eff {
			t.Errorf("IRQ %d: effective_affinity_list holds %q; want %q", tc.irq, got, tc.eff)
		}
	}
	for _, w := range k.writes {
		if strings.HasPrefix(w, AffinityPath(30)) {
			t.Errorf("read-only IRQ 30 written: %s", w)
		}
	}
}

// TestSetThroughProcIRQ: the hooks' way, /proc/irq opened once: a file
// nobody may write (a managed IRQ as Linux 6.12 shows it) is refused and
// left as it was, a longer list is replaced whole, an IRQ without
// effective_affinity_list is no error, and a link in a file's place is
// refused, not followed.
func TestSetThroughProcIRQ(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	proc, err := OpenProcIRQ(r)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	s := Setter{Root: r, Proc: proc}
	if res, err := s.Set(30, cpuset.MustParse("0-1")); err != nil || !res.Refused {
		t.Errorf("read-only IRQ 30: %+v, %v", res, err)
	}
	if got := n.read(AffinityPath(30)); got != "0-5" {
		t.Errorf("read-only IRQ 30 holds %q after the refusal", got)
	}
	if err := os.Remove(r.Path(EffectivePath(60))); err != nil {
		t.Fatal(err)
	}
	n.write(AffinityPath(60), "0-1,3,5,7,9,11,13,15\n", 0o644)
	res, err := s.Set(60, cpuset.MustParse("8"))
	if err != nil || res.Refused || res.Got.String() != "8" || !res.Effective.IsEmpty() || res.Mismatch != "" {
		t.Errorf("IRQ 60: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(r.Path(AffinityPath(60))); string(b) != "8" {
		t.Errorf("IRQ 60's file holds %q, want the value alone", b)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("0-15\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(r.Path(AffinityPath(61)))
	if err := os.Symlink(outside, r.Path(AffinityPath(61))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(61, cpuset.MustParse("0")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("IRQ 61 as a link: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "0-15\n" {
		t.Errorf("written through a link: %q", b)
	}
}

// TestSetAffinityMismatch: a kernel that keeps another list, or an
// effective CPU outside the list, is reported, not an error.
func TestSetAffinityMismatch(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	k := &kernel{Root: r, keep: map[int]string{60: "0-15"}}
	res, err := Setter{Root: r, Files: k}.Set(60, cpuset.MustParse("0-1"))
	if err != nil || res.Refused || res.Got.String() != "0-15" ||
		res.Mismatch != `/proc/irq/60/smp_affinity_list reads "0-15" after writing "0-1"` {
		t.Errorf("kept: %+v, %v", res, err)
	}
	// A plain root: the effective CPU the write above left (0) stays,
	// outside 8-9.
	res, err = SetAffinity(r, 60, cpuset.MustParse("8-9"))
	if err != nil || res.Got.String() != "8-9" || res.Effective.String() != "0" ||
		!strings.HasPrefix(res.Mismatch, `/proc/irq/60/effective_affinity_list is "0", outside "8-9"`) {
		t.Errorf("effective: %+v, %v", res, err)
	}
	if got := n.read(AffinityPath(60)); got != "8-9" {
		t.Errorf("smp_affinity_list holds %q", got)
	}
	// No effective_affinity_list (kernels before 4.15): nothing to check.
	if err := os.Remove(r.Path(EffectivePath(61))); err != nil {
		t.Fatal(err)
	}
	if res, err = SetAffinity(r, 61, cpuset.MustParse("8-9")); err != nil || res.Mismatch != "" || !res.Effective.IsEmpty() {
		t.Errorf("no effective file: %+v, %v", res, err)
	}
	// An IRQ not active: an empty effective list is within any.
	n.write(EffectivePath(0), "\n", 0o644)
	if res, err = SetAffinity(r, 0, cpuset.MustParse("0")); err != nil || res.Mismatch != "" {
		t.Errorf("inactive: %+v, %v", res, err)
	}
}

// TestSetAffinityErrors: what is not the kernel's refusal is an error.
func TestSetAffinityErrors(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	if _, err := SetAffinity(r, 70, cpuset.MustParse("0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("gone IRQ: %v", err)
	}
	if _, err := SetAffinity(r, 60, cpuset.Set{}); err == nil || !strings.Contains(err.Error(), "IRQ 60: empty CPU list") {
		t.Errorf("empty list: %v", err)
	}
	// Permission denied opening the file (not root): no refusal.
	open := &kernel{Root: r, refuse: map[int]error{60: &fs.PathError{Op: "open", Path: r.Path(AffinityPath(60)), Err: syscall.EPERM}}}
	if res, err := (Setter{Root: r, Files: open}).Set(60, cpuset.MustParse("0")); err == nil || res.Refused {
		t.Errorf("open EPERM: %+v, %v", res, err)
	}
	// EINVAL: no online CPU in the list.
	inval := &kernel{Root: r, refuse: map[int]error{60: syscall.EINVAL}}
	if res, err := (Setter{Root: r, Files: inval}).Set(60, cpuset.MustParse("99")); !errors.Is(err, syscall.EINVAL) || res.Refused {
		t.Errorf("EINVAL: %+v, %v", res, err)
	}
	// Garbage read back.
	n.write(EffectivePath(61), "x\n", 0o644)
	if _, err := SetAffinity(r, 61, cpuset.MustParse("8")); err == nil || !strings.HasPrefix(err.Error(), "/proc/irq/61/effective_affinity_list: cpu list") {
		t.Errorf("garbage effective: %v", err)
	}
	// smp_affinity_list a folder.
	if err := os.Remove(r.Path(AffinityPath(9))); err != nil {
		t.Fatal(err)
	}
	n.write(AffinityPath(9)+"/x", "", 0o644)
	if _, err := SetAffinity(r, 9, cpuset.MustParse("0")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: %v", err)
	}
}

// TestSetAffinityNoLinks: a write never goes through a symbolic link,
// whether the IRQ's folder or the file is one, pointing out of the root
// or within it.
func TestSetAffinityNoLinks(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	outside := t.TempDir()
	victim := filepath.Join(outside, "smp_affinity_list")
	if err := os.WriteFile(victim, []byte("0-15\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /proc/irq/80 -> a folder outside the root.
	if err := os.Symlink(outside, r.Path(Dir(80))); err != nil {
		t.Fatal(err)
	}
	// /proc/irq/81/smp_affinity_list -> the file outside.
	if err := os.MkdirAll(r.Path(Dir(81)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, r.Path(AffinityPath(81))); err != nil {
		t.Fatal(err)
	}
	// /proc/irq/82 -> /proc/irq/60, within the root.
	if err := os.Symlink("60", r.Path(Dir(82))); err != nil {
		t.Fatal(err)
	}
	for name, set := range setters(t, r) {
		for _, irq := range []int{80, 81, 82} {
			_, err := set.Set(irq, cpuset.MustParse("0"))
			if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
				t.Errorf("%s, IRQ %d: %v", name, irq, err)
			}
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "0-15\n" {
		t.Errorf("file outside the root holds %q", b)
	}
	if got := n.read(AffinityPath(60)); got != "0-15" {
		t.Errorf("IRQ 60 written through a link: %q", got)
	}
}

// setters are the ways a Setter reaches /proc/irq: walking from the root
// for each write, and through /proc/irq opened once (OpenProcIRQ), with
// openat2 and without.
func setters(t *testing.T, r host.Root) map[string]Setter {
	t.Helper()
	proc, err := OpenProcIRQ(r)
	if err != nil {
		t.Fatal(err)
	}
	old, err := OpenProcIRQ(r)
	if err != nil {
		t.Fatal(err)
	}
	old.noOpenat2.Store(true) // as on Linux before 5.6
	t.Cleanup(func() { proc.Close(); old.Close() })
	return map[string]Setter{"walking": {Root: r}, "ProcIRQ": {Root: r, Proc: proc}, "ProcIRQ without openat2": {Root: r, Proc: old}}
}
