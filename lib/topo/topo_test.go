package topo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

func TestPCIPath(t *testing.T) {
	gpu := PCIPlace{SysPath: "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0", NUMANode: 0}
	hcaSameSwitch := PCIPlace{SysPath: "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0", NUMANode: 0}
	// Behind a second switch below the first: two switches apart.
	hcaTwoSwitches := PCIPlace{SysPath: "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:02.0/0000:1c:00.0/0000:1d:00.0/0000:1e:00.0", NUMANode: 0}
	hcaSameRoot := PCIPlace{SysPath: "/sys/devices/pci0000:17/0000:17:02.0/0000:20:00.0", NUMANode: 0}
	hcaSameNUMA := PCIPlace{SysPath: "/sys/devices/pci0000:30/0000:30:01.0/0000:31:00.0", NUMANode: 0}
	hcaOther := PCIPlace{SysPath: "/sys/devices/pci0000:90/0000:90:01.0/0000:91:00.0", NUMANode: 1}
	vm := PCIPlace{SysPath: "/sys/devices/pci0000:00/0000:00:06.0", NUMANode: -1}
	vmNIC := PCIPlace{SysPath: "/sys/devices/pci0000:00/0000:00:03.0", NUMANode: -1}
	for _, c := range []struct {
		a, b PCIPlace
		want PCIPath
	}{
		{gpu, hcaSameSwitch, PathOneSwitch},
		{gpu, hcaTwoSwitches, PathSwitch},
		{hcaSameSwitch, hcaTwoSwitches, PathSwitch},
		{gpu, hcaSameRoot, PathHostBridge},
		{gpu, hcaSameNUMA, PathNUMA},
		{gpu, hcaOther, PathSystem},
		{vm, vmNIC, PathHostBridge},
		{PCIPlace{NUMANode: -1}, PCIPlace{NUMANode: -1}, PathSystem},
	} {
		if got := pciPath(c.a, c.b); got != c.want {
			t.Errorf("pciPath(%s, %s) = %s, want %s", c.a.SysPath, c.b.SysPath, got, c.want)
		}
	}
	if got := parentPCI("/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/infiniband/mlx5_0"); got != "0000:18:00.0" {
		t.Errorf("parentPCI = %q", got)
	}
	if got := parentPCI("/sys/devices/virtual/net/lo"); got != "" {
		t.Errorf("parentPCI(virtual) = %q", got)
	}
}

func TestParsers(t *testing.T) {
	if d, err := parseDistances("10 21 21 32\n"); err != nil || len(d) != 4 || d[3] != 32 {
		t.Errorf("parseDistances = %v, %v", d, err)
	}
	if _, err := parseDistances("10 x"); err == nil {
		t.Error("parseDistances(garbage) should fail")
	}
	if kib := parseNodeMemTotal([]byte("Node 1 MemTotal:       263725020 kB\nNode 1 MemFree: 1 kB\n")); kib != 263725020 {
		t.Errorf("parseNodeMemTotal = %d", kib)
	}
	if kib, ok := parseMemTotal([]byte("MemTotal:       16384 kB\n")); !ok || kib != 16384 {
		t.Errorf("parseMemTotal = %d %v", kib, ok)
	}
}

// TestDiscoverMinimalVM: a hypervisor that exposes no topology files and no
// NUMA directories still gives a usable node: one socket, one core per CPU,
// one NUMA node.
func TestDiscoverMinimalVM(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sys/devices/system/cpu"), 0o755)
	os.WriteFile(filepath.Join(dir, "sys/devices/system/cpu/online"), []byte("0-3\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "proc/sys/kernel"), 0o755)
	os.WriteFile(filepath.Join(dir, "proc/meminfo"), []byte("MemTotal: 8388608 kB\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "proc/sys/kernel/hostname"), []byte("gpu7.cluster.example\n"), 0o644)
	n, err := Discover(host.NewRoot(dir), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Sockets) != 1 || len(n.Cores) != 4 || len(n.NUMA) != 1 || !n.NUMA[0].CPUs.Equal(cpuset.Range(0, 3)) {
		t.Errorf("node %+v", n)
	}
	if n.Hostname != "gpu7" || n.MemoryMiB != 8192 || n.ThreadsPerCore() != 1 {
		t.Errorf("hostname %q memory %d", n.Hostname, n.MemoryMiB)
	}
	if got := n.CoresOf(cpuset.New(1, 2)).String(); got != "1-2" {
		t.Errorf("CoresOf = %s", got)
	}
	os.WriteFile(filepath.Join(dir, "sys/devices/system/cpu/online"), []byte("0-\n"), 0o644)
	if _, err := Discover(host.NewRoot(dir), nil, Options{}); err == nil || !strings.Contains(err.Error(), "online") {
		t.Errorf("garbage online list: %v", err)
	}
}
