package knob

import (
	"testing"
)

func TestSysctlRoundTrip(t *testing.T) {
	r := writeTree(t, smallNode().files())
	for _, tc := range []struct {
		name, setting string
		orig, want    Value
	}{
		{"vm_swappiness", "10", "60", "10"},
		{"vm_swappiness", "200", "60", "200"},
		{"vm_dirty_ratio", "+40", "20", "40"},
		{"vm_dirty_background_ratio", " 5\n", "10", "5"},
		{"vm_zone_reclaim_mode", "1", "0", "1"},
		{"kernel_numa_balancing", "0", "1", "0"},
	} {
		k := newSysctl(r, tc.name)
		orig, want := roundTrip(t, k, tc.setting)
		if orig != tc.orig || want != tc.want {
			t.Errorf("%s: orig %q want %q", tc.name, orig, want)
		}
	}
}

func TestSysctlDesiredErrors(t *testing.T) {
	r := writeTree(t, smallNode().files())
	for _, tc := range []struct {
		name, setting string
		want          []string
	}{
		{"vm_swappiness", "201", []string{"vm_swappiness", "201", "0..200"}},
		{"vm_swappiness", "-1", []string{"out of range"}},
		{"vm_dirty_ratio", "101", []string{"vm_dirty_ratio", "0..100"}},
		{"vm_zone_reclaim_mode", "8", []string{"0..7"}},
		{"kernel_numa_balancing", "4", []string{"kernel_numa_balancing", "0..3"}},
		{"vm_swappiness", "ten", []string{"vm_swappiness", `"ten" is not an integer`}},
		{"vm_swappiness", "bytes:100", []string{"not an integer"}},
		{"vm_dirty_ratio", "bytes:0", []string{"vm_dirty_ratio", "above 0"}},
		{"vm_dirty_ratio", "bytes:x", []string{"above 0"}},
	} {
		_, err := newSysctl(r, tc.name).Desired(tc.setting)
		wantErr(t, err, tc.want...)
	}
}

// TestDirtyBytes: a node using vm.dirty_bytes reads as bytes:<N>, and
// restoring that writes the bytes file (with the kernel's rule that each
// write zeroes the twin).
func TestDirtyBytes(t *testing.T) {
	n := smallNode().files()
	n["/proc/sys/vm/dirty_ratio"] = "0\n"
	n["/proc/sys/vm/dirty_bytes"] = "268435456\n"
	r := writeTree(t, n)
	kfs := newKernelFS(r)
	kfs.side["/proc/sys/vm/dirty_ratio"] = func(string) { set(t, r, "/proc/sys/vm/dirty_bytes", "0\n") }
	kfs.side["/proc/sys/vm/dirty_bytes"] = func(string) { set(t, r, "/proc/sys/vm/dirty_ratio", "0\n") }
	k := newSysctl(kfs, "vm_dirty_ratio")
	orig, _ := roundTrip(t, k, "40")
	if orig != "bytes:268435456" {
		t.Fatalf("orig %q", orig)
	}
	if get(t, r, "/proc/sys/vm/dirty_bytes") != "268435456" || get(t, r, "/proc/sys/vm/dirty_ratio") != "0" {
		t.Fatal("bytes not restored")
	}
	if v := mustDesired(t, k, "bytes:1048576"); v != "bytes:1048576" {
		t.Fatalf("Desired bytes = %q", v)
	}
	// Ratio 0 with bytes 0 is plain 0.
	set(t, r, "/proc/sys/vm/dirty_bytes", "0")
	if v := mustRead(t, k); v != "0" {
		t.Fatalf("Read = %q", v)
	}
}

func TestSysctlMismatch(t *testing.T) {
	r := writeTree(t, smallNode().files())
	kfs := newKernelFS(r)
	kfs.keep["/proc/sys/vm/swappiness"] = "100" // clamped
	wantMismatch(t, newSysctl(kfs, "vm_swappiness").Apply("150"), "150", "100")
}

func TestSysctlGarbage(t *testing.T) {
	for _, content := range []string{"abc", "", "1 2", "0x10", "9999999999999999999999"} {
		r := writeTree(t, smallNode().files())
		p := "/proc/sys/vm/swappiness"
		set(t, r, p, content)
		k := newSysctl(r, "vm_swappiness")
		_, err := k.Read()
		wantErr(t, err, "vm_swappiness", p)
		_, err = k.Desired("10")
		wantErr(t, err, p)
	}
}

func TestSysctlUnsupported(t *testing.T) {
	r := writeTree(t, map[string]string{"/proc/sys/vm/swappiness": "60"})
	k := newSysctl(r, "kernel_numa_balancing")
	_, err := k.Read()
	wantUnsupported(t, err)
	_, err = k.Desired("0")
	wantUnsupported(t, err)
	wantUnsupported(t, k.Apply("0"))
}
