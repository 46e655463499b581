package gpu

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseInformation(t *testing.T) {
	const f = "/proc/driver/nvidia/gpus/0000:00:06.0/information"
	got, err := parseInformation(f, []byte(information("NVIDIA H200", "GPU-2592755b-9f24-f5f7-a815-34d27fe0aa35", "0000:00:06.0", "0")))
	if err != nil {
		t.Fatal(err)
	}
	want := gpuInformation{Model: "NVIDIA H200", UUID: "GPU-2592755b-9f24-f5f7-a815-34d27fe0aa35", BusID: "0000:00:06.0", Minor: 0}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Spaces only, upper-case bus, blank lines.
	got, err = parseInformation(f, []byte("Model:   NVIDIA H100 80GB HBM3\n\nGPU UUID:  GPU-1\nBus Location: 0000:DB:00.0\nDevice Minor: 5\n"))
	if err != nil || got.BusID != "0000:db:00.0" || got.Minor != 5 || got.Model != "NVIDIA H100 80GB HBM3" {
		t.Errorf("spaces: got %+v, %v", got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"Model: X\nGPU UUID: GPU-1\ngarbage here\n", f + ":3: "},
		{"Model: X\nGPU UUID: GPU-1\nBus Location: 0000:18:00.0\nDevice Minor: zero\n", f + ":4: device minor"},
		{"Model: X\nGPU UUID: GPU-1\nBus Location: somewhere\nDevice Minor: 0\n", f + ":3: bus location"},
		{"Model: X\nGPU UUID: 1234\n", f + ":2: GPU UUID"},
		{"Model: X\nGPU UUID: GPU-1\nBus Location: 0000:18:00.0\n", f + `: no "Device Minor:" line`},
		{"\x00\x01\x02", f + ":1: "},
	} {
		_, err := parseInformation(f, []byte(tc.text))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want prefix %q", tc.text, err, tc.want)
		}
	}
}

func TestParseCapMinor(t *testing.T) {
	n, err := parseCapMinor("access", []byte("DeviceFileMinor: 148\nDeviceFileMode: 292\nDeviceFileModify: 1\n"))
	if err != nil || n != 148 {
		t.Errorf("got %d, %v", n, err)
	}
	if _, err := parseCapMinor("x/access", []byte("DeviceFileMode: 292\n")); err == nil || !strings.HasPrefix(err.Error(), "x/access: ") {
		t.Errorf("missing line: %v", err)
	}
	if _, err := parseCapMinor("x/access", []byte("DeviceFileMode: 292\nDeviceFileMinor: nope\n")); err == nil || !strings.HasPrefix(err.Error(), "x/access:2: ") {
		t.Errorf("bad number: %v", err)
	}
}

// A hand-made root: GPUs listed out of bus order, minors not in index
// order, one in a VM-like state (numa_node -1), one with MIG instances.
func TestProcfsDevices(t *testing.T) {
	caps := "/proc/driver/nvidia/capabilities/gpu3/mig/"
	root := writeRoot(t, map[string]string{
		"/proc/driver/nvidia/gpus/0000:db:00.0/information": information("NVIDIA A100-SXM4-40GB", "GPU-b", "0000:db:00.0", "3"),
		"/proc/driver/nvidia/gpus/0000:18:00.0/information": information("NVIDIA A100-SXM4-40GB", "GPU-a", "0000:18:00.0", "7"),
		"/sys/bus/pci/devices/0000:18:00.0/numa_node":       "-1\n",
		"/sys/bus/pci/devices/0000:18:00.0/local_cpulist":   "0-31\n",
		"/sys/bus/pci/devices/0000:db:00.0/numa_node":       "1\n",
		"/sys/bus/pci/devices/0000:db:00.0/local_cpulist":   "16-31,48-63\n",
		caps + "config":         "DeviceFileMinor: 1\n",
		caps + "gi5/access":     "DeviceFileMinor: 453\nDeviceFileMode: 292\n",
		caps + "gi5/ci0/access": "DeviceFileMinor: 454\n",
		caps + "gi1/access":     "DeviceFileMinor: 417\n",
		caps + "gi1/ci0/access": "DeviceFileMinor: 418\n",
		caps + "gi1/ci1/access": "DeviceFileMinor: 419\n",
		"/proc/driver/nvidia/gpus/0000:db:00.0/numa_status": "Node: 4\nStatus: online\n",
	})
	p := OpenProcfs(root)
	devs, err := p.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices", len(devs))
	}
	a, b := devs[0], devs[1]
	if a.Index != 0 || a.BusID != "0000:18:00.0" || a.Minor != 7 || a.UUID != "GPU-a" || a.NVLinks != nil || a.MIG.Capable {
		t.Errorf("GPU 0: %+v", a)
	}
	if b.Index != 1 || b.BusID != "0000:db:00.0" || b.Minor != 3 || b.Name != "NVIDIA A100-SXM4-40GB" {
		t.Errorf("GPU 1: %+v", b)
	}
	wantMIG := []MIGDevice{{GI: 1, CI: 0, GICapMinor: 417, CICapMinor: 418}, {GI: 1, CI: 1, GICapMinor: 417, CICapMinor: 419}, {GI: 5, CI: 0, GICapMinor: 453, CICapMinor: 454}}
	if !b.MIG.Capable || !b.MIG.Current || len(b.MIG.Devices) != len(wantMIG) {
		t.Fatalf("GPU 1 MIG: %+v", b.MIG)
	}
	for i, m := range b.MIG.Devices {
		if m != wantMIG[i] {
			t.Errorf("MIG device %d: %+v, want %+v", i, m, wantMIG[i])
		}
	}
	// MIGReader answers for one GPU what the inventory says.
	if m, err := p.MIG(1); err != nil || !reflect.DeepEqual(m, b.MIG) {
		t.Errorf("MIG(1) = %+v, %v; want %+v", m, err, b.MIG)
	}
	if _, err := p.MIG(2); err == nil {
		t.Error("MIG(2) of a 2-GPU node worked")
	}
}

func TestProcfsBadFiles(t *testing.T) {
	root := writeRoot(t, map[string]string{
		"/proc/driver/nvidia/gpus/0000:18:00.0/information": "Model: X\nthis is not a key value line\n",
	})
	_, err := OpenProcfs(root).Devices()
	if err == nil || !strings.Contains(err.Error(), "/proc/driver/nvidia/gpus/0000:18:00.0/information:2:") {
		t.Errorf("error %v, want one naming the file and line 2", err)
	}
	// No driver: no GPUs, no error.
	devs, err := OpenProcfs(writeRoot(t, map[string]string{"/proc/": ""})).Devices()
	if err != nil || len(devs) != 0 {
		t.Errorf("empty root: %v, %v", devs, err)
	}
}
