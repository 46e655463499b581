package sdunits

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// systemd's D-Bus CPU sets: bit i%8 of byte i/8 is CPU i (what `busctl
// get-property org.freedesktop.systemd1 ... AllowedCPUs` shows: "ay 1 5"
// for 0,2).
func TestMask(t *testing.T) {
	for _, tc := range []struct {
		cpus string
		mask []byte
	}{
		{"", []byte{}},
		{"0,2", []byte{5}},
		{"0-7", []byte{0xff}},
		{"8", []byte{0, 1}},
		{"1,9-10,23", []byte{2, 6, 0x80}},
	} {
		s, err := cpuset.Parse(tc.cpus)
		if err != nil {
			t.Fatal(err)
		}
		if got := ToMask(s); !bytes.Equal(got, tc.mask) {
			t.Errorf("ToMask(%s) = %v, want %v", tc.cpus, got, tc.mask)
		}
		if got := FromMask(tc.mask); !got.Equal(s) {
			t.Errorf("FromMask(%v) = %s, want %s", tc.mask, got, tc.cpus)
		}
	}
}

func TestUnitInterface(t *testing.T) {
	for name, want := range map[string]string{"cron.service": "Service", "init.scope": "Scope", "user.slice": "Slice", "getty@tty1.service": "Service"} {
		if got := unitInterface(name); got != want {
			t.Errorf("unitInterface(%s) = %s, want %s", name, got, want)
		}
	}
}

// A fixture root is never the node: no D-Bus there.
func TestNotBootedOnFixture(t *testing.T) {
	if New(t.Context(), host.NewRoot(t.TempDir())) != nil {
		t.Error("a fixture root got a systemd manager")
	}
}

// Why says why a node is not taken for systemd's: no /run/systemd/system,
// or a fixture root that has one (D-Bus reaches only this machine).
func TestWhy(t *testing.T) {
	dir := t.TempDir()
	if ok, why := Why(host.NewRoot(dir)); ok || why != "systemd is not PID 1 (no /run/systemd/system)" {
		t.Errorf("no /run/systemd/system: %v, %q", ok, why)
	}
	if err := os.MkdirAll(filepath.Join(dir, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, why := Why(host.NewRoot(dir)); ok || !strings.Contains(why, "is not this machine's") || Booted(host.NewRoot(dir)) {
		t.Errorf("a fixture with /run/systemd/system: %v, %q", ok, why)
	}
}
