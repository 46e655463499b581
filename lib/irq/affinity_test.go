package irq

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
)

func TestReadAffinity(t *testing.T) {
	n := twoSocket(t)
	r := n.finish()
	a, err := ReadAffinity(r, 31)
	if err != nil {
		t.Fatal(err)
	}
	if a.IRQ != 31 || a.CPUs.String() != "6-10" || a.Effective.String() != "9" || !a.HasEffective || a.ReadOnly {
		t.Errorf("IRQ 31 = %+v", a)
	}
	if a, err = ReadAffinity(r, 30); err != nil || !a.ReadOnly || a.CPUs.String() != "0-5" {
		t.Errorf("IRQ 30 = %+v, %v; want read-only 0-5", a, err)
	}
	// A kernel without effective_affinity_list (before 4.15).
	if err := os.Remove(r.Path(EffectivePath(9))); err != nil {
		t.Fatal(err)
	}
	if a, err = ReadAffinity(r, 9); err != nil || a.HasEffective || !a.Effective.IsEmpty() || a.CPUs.String() != "0-15" {
		t.Errorf("IRQ 9 = %+v, %v", a, err)
	}
	// An IRQ freed meanwhile.
	if _, err = ReadAffinity(r, 70); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IRQ 70: %v; want not exist", err)
	}
	for irq, want := range map[int]bool{60: true, 70: false} {
		if ok, err := Exists(r, irq); ok != want || err != nil {
			t.Errorf("Exists(%d) = %v, %v", irq, ok, err)
		}
	}
	affs, gone, err := ReadAffinities(r, []int{0, 70, 61})
	if err != nil || len(affs) != 2 || affs[0].IRQ != 0 || affs[1].IRQ != 61 || !slices.Equal(gone, []int{70}) {
		t.Errorf("ReadAffinities = %+v, %v, %v", affs, gone, err)
	}
}

// TestReadAffinityGarbage: what the kernel never writes is an error
// naming the file.
func TestReadAffinityGarbage(t *testing.T) {
	for _, tc := range []struct{ file, content, want string }{
		{"smp_affinity_list", "zz\n", "/proc/irq/60/smp_affinity_list: cpu list \"zz\""},
		{"smp_affinity_list", "0-3\n8\n", "/proc/irq/60/smp_affinity_list: more than one line"},
		{"smp_affinity_list", "3-1\n", "/proc/irq/60/smp_affinity_list: cpu list \"3-1\": range \"3-1\" is descending"},
		{"smp_affinity_list", "0-99999999\n", "/proc/irq/60/smp_affinity_list: cpu list"},
		{"effective_affinity_list", "ff,ffffffff\n", "/proc/irq/60/effective_affinity_list: cpu list"},
	} {
		n := twoSocket(t)
		n.write(Dir(60)+"/"+tc.file, tc.content, 0o644)
		_, err := ReadAffinity(n.r, 60)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q: %v; want %q...", tc.file, tc.content, err, tc.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for s, want := range map[string]string{"": "", "0-3,8\n": "0-3,8", "1\n\x00": "1", " 4-5 ": "4-5"} {
		got, err := ParseCPUList("/f", s)
		if err != nil || !got.Equal(cpuset.MustParse(want)) {
			t.Errorf("ParseCPUList(%q) = %v, %v", s, got, err)
		}
	}
}
