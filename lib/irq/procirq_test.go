package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProcIRQ reads every IRQ's affinity and permissions as ReadAffinity
// does, leaves out one freed meanwhile, writes a fixture's file in its
// place keeping its mode and leaving no temporary file, and refuses to
// read through a symbolic link.
func TestProcIRQ(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	p, err := OpenProcIRQ(r)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	irqs := []int{0, 9, 16, 26, 30, 31, 60, 61, 99}
	affs, gone, err := p.ReadAffinities(irqs)
	if err != nil || fmt.Sprint(gone) != "[99]" || len(affs) != len(irqs)-1 {
		t.Fatalf("ReadAffinities: %v, gone %v, %v", affs, gone, err)
	}
	for _, a := range affs {
		want, err := ReadAffinity(r, a.IRQ)
		if err != nil || !a.CPUs.Equal(want.CPUs) || a.ReadOnly != want.ReadOnly {
			t.Errorf("IRQ %d: %+v, ReadAffinity %+v (%v)", a.IRQ, a, want, err)
		}
	}
	cpus, _, err := p.ReadCPUs([]int{30})
	if err != nil || cpus[0].CPUs.String() != "0-5" || cpus[0].ReadOnly {
		t.Errorf("ReadCPUs: %+v, %v", cpus, err)
	}

	os.Chmod(r.Path(AffinityPath(60)), 0o600)
	if got, err := p.WriteFile(AffinityPath(60), "0-1"); err != nil || got != "0-1" {
		t.Errorf("WriteFile: %q, %v", got, err)
	}
	fi, _ := os.Stat(r.Path(AffinityPath(60)))
	ents, _ := os.ReadDir(r.Path(Dir(60)))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("after the write: mode %v", fi.Mode())
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("left in the IRQ's folder: %s", e.Name())
		}
	}
	if _, err := p.WriteFile(AffinityPath(99), "0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write of a freed IRQ: %v", err)
	}
	if _, err := p.WriteFile("/proc/irq/../interrupts", "0"); err == nil {
		t.Error("a path out of an IRQ's folder was written")
	}

	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "smp_affinity_list"), []byte("0-15\n"), 0o644)
	os.Symlink(outside, r.Path(Dir(80)))
	if _, _, err := p.ReadCPUs([]int{80}); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("read through a link: %v", err)
	}
	if _, err := p.ReadString(AffinityPath(80)); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("ReadString through a link: %v", err)
	}
}

// OpenProcIRQ refuses a /proc/irq that is a symbolic link.
func TestOpenProcIRQLink(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	os.Rename(r.Path("/proc/irq"), r.Path("/proc/irq.real"))
	os.Symlink("irq.real", r.Path("/proc/irq"))
	if _, err := OpenProcIRQ(r); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("OpenProcIRQ: %v", err)
	}
}
