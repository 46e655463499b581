package health

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// runWith is a read-only prolog health run on root through the backend
// that --gpu-backend spec opens there, with the built-in [health] but
// gpu_count = count.
func runWith(t *testing.T, root host.Root, spec string, count int) *Report {
	t.Helper()
	b, err := gpu.Open(spec, root)
	must(t, err)
	h := config.Default().Health
	h.GPUCount = count
	rep, err := Run(context.Background(), Options{Op: "prolog", Root: root, GPU: b, Health: h, ReadOnly: true})
	must(t, err)
	return rep
}

// TestGPUCountDriverGone: a DGX H100 whose driver did not load (no
// /proc/driver/nvidia, its 8 GPUs still on the PCI bus): --gpu-backend auto
// falls back to none, and gpu_count fails, fatal, naming the GPUs and why
// no backend lists them, whether or not health.gpu_count is set. An
// admin's explicit none skips it as before.
func TestGPUCountDriverGone(t *testing.T) {
	n := newNode(t)
	must(t, os.Remove(filepath.Join(n.dir, "proc/driver")))
	const want = "8 NVIDIA GPUs on the PCI bus (0000:18:00.0, 0000:2a:00.0, 0000:3a:00.0, ...) but no GPU backend can list them (/proc/driver/nvidia missing: driver not loaded?)"
	for _, count := range []int{0, 8} {
		rep := runWith(t, n.root, "auto", count)
		r := one(t, rep, "gpu_count", "node")
		if r.Status != Fail || r.Severity != "fatal" || r.Reason != want || rep.Reason() != "health: GPU_MISSING reboot: "+want {
			t.Errorf("gpu_count = %d: %+v (report reason %q)", count, r, rep.Reason())
		}
	}
	rep := runWith(t, n.root, "auto", 4)
	if r := one(t, rep, "gpu_count", "node"); r.Status != Fail || r.Reason != want+"; want 4 (health.gpu_count)" {
		t.Errorf("gpu_count = 4: %+v", r)
	}
	for _, count := range []int{0, 8} {
		rep := runWith(t, n.root, "none", count)
		if r := one(t, rep, "gpu_count", "node"); r.Status != Skip || r.Reason != "the GPU backend is none" || len(rep.Fatal()) != 0 {
			t.Errorf("explicit none, gpu_count = %d: %+v", count, r)
		}
	}
}

// TestGPUCountNoGPUNode: auto finding no backend on a node whose PCI bus
// has no NVIDIA GPU (only NVSwitches, GPUs passed through to VMs with
// vfio-pci, an audio function, another vendor's VGA) is a node without
// GPUs: gpu_count is skipped, unless health.gpu_count wants GPUs.
func TestGPUCountNoGPUNode(t *testing.T) {
	dir := t.TempDir()
	for bus, vc := range map[string][3]string{
		"0000:05:00.0": {"0x10de", "0x068000", ""},         // NVSwitch
		"0000:18:00.0": {"0x10de", "0x030200", "vfio-pci"}, // H100 passed through
		"0000:18:00.1": {"0x10de", "0x040300", ""},         // an audio function
		"0000:03:00.0": {"0x102b", "0x030000", ""},         // BMC's VGA
	} {
		d := filepath.Join(dir, "sys/bus/pci/devices", bus)
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "vendor"), []byte(vc[0]+"\n"), 0o444))
		must(t, os.WriteFile(filepath.Join(d, "class"), []byte(vc[1]+"\n"), 0o444))
		if vc[2] != "" {
			must(t, os.MkdirAll(filepath.Join(dir, "sys/bus/pci/drivers", vc[2]), 0o755))
			must(t, os.Symlink("../../drivers/"+vc[2], filepath.Join(d, "driver")))
		}
	}
	root := host.NewRoot(dir)
	rep := runWith(t, root, "auto", 0)
	if r := one(t, rep, "gpu_count", "node"); r.Status != Skip || len(rep.Fatal()) != 0 ||
		r.Reason != "no GPU backend answers (/proc/driver/nvidia missing: driver not loaded?) and no NVIDIA GPU is on the PCI bus" {
		t.Errorf("no GPU on the bus: %+v\n%+v", r, rep.Fatal())
	}
	rep = runWith(t, root, "auto", 2)
	if r := one(t, rep, "gpu_count", "node"); r.Status != Fail || r.Severity != "fatal" ||
		r.Reason != "no GPU backend can list a GPU (/proc/driver/nvidia missing: driver not loaded?), want 2 (health.gpu_count)" {
		t.Errorf("gpu_count = 2: %+v", r)
	}
}
