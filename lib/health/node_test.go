package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/nccl"
)

// tiny is a root of just the files given.
func tiny(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(c), 0o644))
	}
	return host.NewRoot(dir)
}

func evalNode(f *Facts, e Expect, check string) []Result {
	return Evaluate(f, e, []string{check}, Events{})
}

func TestPCIeLink(t *testing.T) {
	dev := "/sys/bus/pci/devices/0000:5d:00.0/"
	files := func(w, s string) map[string]string {
		return map[string]string{dev + "current_link_width": w, dev + "max_link_width": "16\n",
			dev + "current_link_speed": s, dev + "max_link_speed": "32.0 GT/s PCIe\n"}
	}
	d := gpu.Device{Index: 3, BusID: "0000:5d:00.0", Name: "NVIDIA H100 80GB HBM3"}
	busy := uint64(0)
	for _, tc := range []struct {
		w, s     string
		throttle uint64
		models   Models
		status   Status
		reason   string
	}{
		{"16\n", "32.0 GT/s PCIe\n", busy, nil, OK, ""},
		{"8\n", "32.0 GT/s PCIe\n", busy, nil, Fail, gpu3 + ": PCIe link width x8, want x16"},
		{"16\n", "16.0 GT/s PCIe\n", busy, nil, Fail, gpu3 + ": PCIe link speed 16.0 GT/s PCIe, want 32.0 GT/s PCIe"},
		// An idle GPU lowers its link speed: not a failure.
		{"16\n", "2.5 GT/s PCIe\n", gpu.ThrottleGPUIdle, nil, OK, ""},
		// The model file wants more than the slot's maximum says.
		{"16\n", "32.0 GT/s PCIe\n", busy, Models{d.Name: {PCIeWidth: 32}}, Fail, "want x32"},
		{"x16\n", "8 GT/s\n", busy, Models{d.Name: {PCIeSpeed: "8 GT/s"}}, OK, ""},
	} {
		r := tiny(t, files(tc.w, tc.s))
		l, err := ReadPCIeLink(r, d.BusID)
		must(t, err)
		res := evalNode(&Facts{GPUs: []GPUFacts{{Dev: d, PCIe: l, Throttle: tc.throttle}}}, Expect{Models: tc.models}, "pcie_link")
		if len(res) != 1 || res[0].Status != tc.status || !strings.Contains(res[0].Reason, tc.reason) {
			t.Errorf("%q %q: %+v", tc.w, tc.s, res)
		}
	}
	_, err := ReadPCIeLink(tiny(t, files("sixteen\n", "32.0 GT/s PCIe\n")), d.BusID)
	if err == nil || !strings.Contains(err.Error(), dev+"current_link_width") {
		t.Errorf("garbage width: %v", err)
	}
	_, err = ReadPCIeLink(tiny(t, files("16\n", "fast\n")), d.BusID)
	if err == nil || !strings.Contains(err.Error(), dev+"current_link_speed") {
		t.Errorf("garbage speed: %v", err)
	}
	// No link attributes (some VMs): skipped.
	_, err = ReadPCIeLink(tiny(t, nil), d.BusID)
	res := evalNode(&Facts{GPUs: []GPUFacts{{Dev: d, PCIeErr: err}}}, Expect{}, "pcie_link")
	if res[0].Status != Skip {
		t.Errorf("absent: %+v", res)
	}
}

func TestIBPorts(t *testing.T) {
	port := func(dev, state, rate, layer string) map[string]string {
		p := "/sys/class/infiniband/" + dev + "/ports/1/"
		return map[string]string{p + "state": state, p + "rate": rate, p + "link_layer": layer}
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	root := tiny(t, merge(port("mlx5_0", "4: ACTIVE\n", "400 Gb/sec (4X NDR)\n", "InfiniBand\n"),
		port("mlx5_1", "1: DOWN\n", "10 Gb/sec (4X SDR)\n", "InfiniBand\n"),
		port("mlx5_2", "4: ACTIVE\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n"),
		port("mlx5_3", "1: DOWN\n", "100 Gb/sec (4X EDR)\n", "Ethernet\n")))
	ports, err := ReadIBPorts(root)
	must(t, err)
	f := &Facts{IB: ports}
	e := Expect{}
	e.Health.IBRateGbps = 400
	res := evalNode(f, e, "ib_ports")
	var fails []string
	for _, r := range res {
		if r.Status == Fail {
			fails = append(fails, r.Reason)
		}
	}
	want := "InfiniBand mlx5_1 port 1 is DOWN, want ACTIVE|InfiniBand mlx5_2 port 1 runs at 200 Gb/sec (4X HDR), want 400 Gb/sec"
	if strings.Join(fails, "|") != want || len(res) != 3 {
		t.Errorf("failures %q, want %q (%d results)", fails, want, len(res))
	}
	// Named devices: only those, and a missing one fails.
	e = Expect{}
	e.Health.IBDevices = []string{"mlx5_0", "mlx5_9"}
	res = evalNode(f, e, "ib_ports")
	if len(res) != 2 || res[0].Status != OK || res[1].Reason != "InfiniBand device mlx5_9 not found (health.ib_devices)" {
		t.Errorf("named: %+v", res)
	}
	// Not configured: skipped.
	if res := evalNode(f, Expect{}, "ib_ports"); res[0].Status != Skip {
		t.Errorf("unconfigured: %+v", res)
	}
	_, err = ReadIBPorts(tiny(t, port("mlx5_0", "ACTIVE\n", "400 Gb/sec\n", "InfiniBand\n")))
	if err == nil || !strings.Contains(err.Error(), "/sys/class/infiniband/mlx5_0/ports/1/state") {
		t.Errorf("garbage state: %v", err)
	}
	_, err = ReadIBPorts(tiny(t, port("mlx5_0", "4: ACTIVE\n", "fast\n", "InfiniBand\n")))
	if err == nil || !strings.Contains(err.Error(), "ports/1/rate") {
		t.Errorf("garbage rate: %v", err)
	}
}

func TestSwap(t *testing.T) {
	on := tiny(t, map[string]string{"/proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/nvme0n1p3                          partition\t8388604\t\t0\t\t-2\n"})
	off := tiny(t, map[string]string{"/proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"})
	meminfo := tiny(t, map[string]string{"/proc/meminfo": "MemTotal: 100 kB\nSwapTotal:       2048 kB\n"})
	for _, tc := range []struct {
		root   host.Root
		want   string
		status Status
		reason string
	}{
		{on, "off", Fail, "swap is on: 8191 MiB (/dev/nvme0n1p3), want off (health.swap)"},
		{on, "any", OK, ""},
		{off, "off", OK, ""},
		{meminfo, "off", Fail, "swap is on: 2 MiB, want off (health.swap)"},
	} {
		s, err := ReadSwap(tc.root)
		e := Expect{}
		e.Health.Swap = tc.want
		res := evalNode(&Facts{Swap: s, SwapErr: err}, e, "swap")
		if res[0].Status != tc.status || res[0].Reason != tc.reason {
			t.Errorf("swap %s: %+v, want %s %q", tc.want, res[0], tc.status, tc.reason)
		}
	}
	_, err := ReadSwap(tiny(t, map[string]string{"/proc/swaps": "Filename Type Size Used Priority\n/swapfile file lots 0 -2\n"}))
	if err == nil || !strings.HasPrefix(err.Error(), "/proc/swaps:2: ") {
		t.Errorf("garbage: %v", err)
	}
}

func TestNCCLTopo(t *testing.T) {
	root := tiny(t, map[string]string{
		"/etc/nccl/topo.xml": `<system version="1"><cpu numaid="0"><pci busid="0000:18:00.0"/></cpu><cpu numaid="1"/></system>`,
		"/etc/nccl/bad.xml":  "<system><cpu>\n</system>",
		"/etc/nccl/html.xml": "<html></html>",
	})
	for _, tc := range []struct{ file, status, reason string }{
		{"/etc/nccl/topo.xml", "ok", ""},
		{"/etc/nccl/bad.xml", "fail", "NCCL topology file: /etc/nccl/bad.xml:2: "},
		{"/etc/nccl/html.xml", "fail", "root element <html>, want <system>"},
		{"/etc/nccl/none.xml", "fail", "NCCL topology file /etc/nccl/none.xml does not exist"},
	} {
		cpus, err := nccl.CheckTopoFile(root, tc.file)
		e := Expect{}
		e.Health.NCCLTopoFile = tc.file
		r := evalNode(&Facts{TopoCPUs: cpus, TopoErr: err}, e, "nccl_topo")[0]
		if string(r.Status) != tc.status || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: %+v", tc.file, r)
		}
	}
	if r := evalNode(&Facts{}, Expect{}, "nccl_topo")[0]; r.Status != Skip {
		t.Errorf("unconfigured: %+v", r)
	}
}

func TestCMDQV(t *testing.T) {
	arm := "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\n"
	for _, tc := range []struct {
		name   string
		files  map[string]string
		status Status
		reason string
	}{
		{"x86", map[string]string{"/proc/cpuinfo": "vendor_id\t: GenuineIntel\n"}, Skip, "not an arm64 node"},
		{"arm64 metal", map[string]string{"/proc/cpuinfo": arm, "/sys/class/dmi/id/sys_vendor": "NVIDIA\n"}, Skip, "not a virtual machine"},
		{"arm64 VM without", map[string]string{"/proc/cpuinfo": arm, "/sys/class/dmi/id/sys_vendor": "QEMU\n"}, Fail,
			"arm64 VM (/sys/class/dmi/id/sys_vendor = QEMU) without the SMMU CMDQV driver (tegra241_cmdqv)"},
		{"arm64 VM with", map[string]string{"/proc/cpuinfo": arm, "/sys/hypervisor/type": "kvm\n", "/sys/module/tegra241_cmdqv/refcnt": "0\n"}, OK, ""},
	} {
		r := evalNode(&Facts{CMDQV: ReadCMDQV(tiny(t, tc.files))}, Expect{}, "cmdqv")[0]
		if r.Status != tc.status || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
	// Severity from the config: warn by default.
	n := newNode(t)
	if r := one(t, n.run("prolog", false), "cmdqv", "node"); r.Status != Skip {
		t.Errorf("dgxh100: %+v", r)
	}
}

func TestDriverVersion(t *testing.T) {
	v, err := gpu.ParseDriverVersion("version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)  Tue Mar  5 2024\n")
	if err != nil || v != "550.54.15" {
		t.Errorf("%q %v", v, err)
	}
	if _, err := gpu.ParseDriverVersion("/proc/driver/nvidia/version", "garbage\n"); err == nil || !strings.HasPrefix(err.Error(), "/proc/driver/nvidia/version: ") {
		t.Errorf("garbage: %v", err)
	}
	for _, tc := range []struct{ a, b string }{{"550.54.15", "535.104"}, {"535.104.05", "535.104"}, {"570", "550.127.8"}} {
		if compareVersions(tc.a, tc.b) <= 0 || compareVersions(tc.b, tc.a) >= 0 {
			t.Errorf("%s vs %s", tc.a, tc.b)
		}
	}
}

func TestModelFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "models.toml")
	must(t, os.WriteFile(good, []byte("[models.\"NVIDIA H100 80GB HBM3\"]\nnvlinks = 18\npcie_width = 16\npcie_speed = \"32.0 GT/s PCIe\"\ndriver_min = \"560.1\"\n"), 0o644))
	ms, err := LoadModels(good)
	must(t, err)
	n := newNode(t)
	gpumock.SetFaults(n.dev(3), gpumock.Faults{NVLinksDown: 1})
	rep, err := Run(t.Context(), Options{Op: "prolog", Root: n.root, GPU: n.b, Health: n.cfg, Models: ms, Spool: n.spool})
	must(t, err)
	var reasons []string
	for _, r := range rep.Fatal() {
		reasons = append(reasons, r.Reason)
	}
	want := "NVIDIA driver 550.54.15 is older than 560.1 (model file, NVIDIA H100 80GB HBM3)|" + gpu3 + ": 17 of 18 NVLinks active, want 18 (model file)"
	if strings.Join(reasons, "|") != want {
		t.Errorf("fatal %q\nwant %q", reasons, want)
	}
	for _, tc := range []struct{ src, want string }{
		{"[models.x]\nnvlink = 18\n", "unknown key models.x.nvlink"},
		{"[models.x]\nnvlinks = 99\n", `models."x".nvlinks = 99: must be 0..64`},
		{"[models.x]\npcie_speed = \"fast\"\n", `models."x".pcie_speed: "fast" is not a link speed`},
		{"[models.x]\nnvlinks = \n", "m.toml:2: "},
	} {
		if _, err := ParseModels("m.toml", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.toml") {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
	if _, err := LoadModels(filepath.Join(dir, "none.toml")); err == nil || !strings.Contains(err.Error(), "none.toml") {
		t.Errorf("missing file: %v", err)
	}
}
