package irq

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// fixIRQ is one IRQ of a fixture node: its /proc/interrupts row and its
// /proc/irq/<n>/ files.
type fixIRQ struct {
	irq      int
	chip     string
	hwirq    int
	handler  string
	actions  []string
	hot      int    // the CPU its count is on
	aff, eff string // smp_affinity_list, effective_affinity_list
	readOnly bool   // smp_affinity_list 0444, as Linux 6.12+ shows managed IRQs
}

// fixDev is one PCI function of a fixture node.
type fixDev struct {
	bdf      string
	numa     int
	local    string
	msi      []int
	intx     int
	noNUMA   bool // no numa_node file at all
	realPath string
}

// node builds a fixture root: /proc/interrupts, /proc/irq/<n>/ and
// /sys/bus/pci/devices/<bdf>/, the way the kernel shows them.
type node struct {
	t    testing.TB
	r    host.Root
	ncpu int
	irqs []fixIRQ
}

func newNode(t testing.TB, ncpu int) *node {
	t.Helper()
	return &node{t: t, r: host.NewRoot(t.TempDir()), ncpu: ncpu}
}

// write writes a node file, making its folders.
func (n *node) write(p, content string, mode os.FileMode) {
	n.t.Helper()
	full := n.r.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		n.t.Fatal(err)
	}
	// Replace rather than rewrite: a test not run as root cannot write a
	// read-only fixture file.
	if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		n.t.Fatal(err)
	}
}

// read reads a node file, trimmed.
func (n *node) read(p string) string {
	n.t.Helper()
	b, err := os.ReadFile(n.r.Path(p))
	if err != nil {
		n.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (n *node) irq(f fixIRQ) {
	n.t.Helper()
	n.irqs = append(n.irqs, f)
	mode := os.FileMode(0o644)
	if f.readOnly {
		mode = 0o444
	}
	n.write(AffinityPath(f.irq), f.aff+"\n", mode)
	n.write(EffectivePath(f.irq), f.eff+"\n", 0o644)
	n.write(Dir(f.irq)+"/smp_affinity", "ffff\n", mode)
	n.write(Dir(f.irq)+"/node", "0\n", 0o444)
}

func (n *node) device(d fixDev) {
	n.t.Helper()
	dir := PCIDevicesDir + "/" + d.bdf
	if d.realPath != "" {
		// /sys/bus/pci/devices/<bdf> is a relative link into
		// /sys/devices, as on a node.
		dir = d.realPath
		link := n.r.Path(PCIDevicesDir + "/" + d.bdf)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			n.t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), n.r.Path(d.realPath))
		if err != nil {
			n.t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			n.t.Fatal(err)
		}
	}
	if !d.noNUMA {
		n.write(dir+"/numa_node", fmt.Sprintf("%d\n", d.numa), 0o644)
	}
	n.write(dir+"/local_cpulist", d.local+"\n", 0o444)
	n.write(dir+"/irq", fmt.Sprintf("%d\n", d.intx), 0o444)
	for _, v := range d.msi {
		kind := "msix"
		n.write(fmt.Sprintf("%s/msi_irqs/%d", dir, v), kind+"\n", 0o444)
	}
}

// finish writes /proc/interrupts from the IRQs added, as Linux 6.8 prints
// it, with a few architecture rows.
func (n *node) finish() host.Root {
	n.t.Helper()
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", 12))
	for c := 0; c < n.ncpu; c++ {
		fmt.Fprintf(&b, "CPU%-8d", c)
	}
	b.WriteString("\n")
	for _, f := range n.irqs {
		fmt.Fprintf(&b, "%4d: ", f.irq)
		for c := 0; c < n.ncpu; c++ {
			v := 0
			if c == f.hot {
				v = 1000 + f.irq
			}
			fmt.Fprintf(&b, "%10d ", v)
		}
		fmt.Fprintf(&b, " %8s %4d-%-8s", f.chip, f.hwirq, f.handler)
		if len(f.actions) > 0 {
			b.WriteString("  " + strings.Join(f.actions, ", "))
		}
		b.WriteString("\n")
	}
	for _, l := range []string{"NMI", "LOC", "RES"} {
		fmt.Fprintf(&b, "%4s: ", l)
		for c := 0; c < n.ncpu; c++ {
			fmt.Fprintf(&b, "%10d ", 7*c)
		}
		b.WriteString("  Some interrupts\n")
	}
	fmt.Fprintf(&b, "%4s: %10d\n", "ERR", 0)
	n.write(InterruptsPath, b.String(), 0o444)
	return n.r
}

// Bus ids of the two-socket fixture.
const (
	gpu0 = "0000:18:00.0" // NUMA node 0
	hca0 = "0000:1a:00.0" // NUMA node 0
	gpu1 = "0000:9a:00.0" // NUMA node 1
	hca1 = "0000:9c:00.0" // NUMA node 1
	nvme = "0000:05:00.0" // NUMA node 0, managed queues
)

// twoSocket is a 2-socket node of 16 CPUs (node 0: 0-7, node 1: 8-15)
// with 2 GPUs and 2 mlx5 HCAs, one of each per node, an NVMe drive with
// managed queues, and the usual IO-APIC lines, every IRQ on all CPUs as
// the kernel leaves them before irqbalance runs.
func twoSocket(t testing.TB) *node {
	n := newNode(t, 16)
	n.irq(fixIRQ{irq: 0, chip: "IR-IO-APIC", hwirq: 2, handler: "edge", actions: []string{"timer"}, aff: "0-15", eff: "0"})
	n.irq(fixIRQ{irq: 9, chip: "IR-IO-APIC", hwirq: 9, handler: "fasteoi", actions: []string{"acpi"}, aff: "0-15", eff: "0"})
	n.irq(fixIRQ{irq: 16, chip: "IR-IO-APIC", hwirq: 16, handler: "fasteoi", actions: []string{"i801_smbus"}, hot: 3, aff: "0-15", eff: "3"})
	n.irq(fixIRQ{irq: 26, chip: "IR-PCI-MSI-0000:00:1c.0", handler: "edge", actions: []string{"PCIe PME", "pciehp"}, hot: 12, aff: "12", eff: "12"})
	// NVMe queues: managed, spread by the kernel; 30 as Linux 6.12+
	// shows it (read-only), 31 and 32 as older kernels do.
	n.irq(fixIRQ{irq: 30, chip: "IR-PCI-MSIX-" + nvme, hwirq: 0, handler: "edge", actions: []string{"nvme0q0"}, aff: "0-5", eff: "1", readOnly: true})
	n.irq(fixIRQ{irq: 31, chip: "IR-PCI-MSIX-" + nvme, hwirq: 1, handler: "edge", actions: []string{"nvme0q1"}, hot: 6, aff: "6-10", eff: "9"})
	n.irq(fixIRQ{irq: 32, chip: "IR-PCI-MSIX-" + nvme, hwirq: 2, handler: "edge", actions: []string{"nvme0q2"}, hot: 11, aff: "11-15", eff: "14"})
	for i, name := range []string{"mlx5_async0", "mlx5_comp0", "mlx5_comp1", "mlx5_comp2", "mlx5_comp3"} {
		n.irq(fixIRQ{irq: 40 + i, chip: "IR-PCI-MSIX-" + hca0, hwirq: i, handler: "edge", actions: []string{name + "@pci:" + hca0}, hot: i, aff: "0-15", eff: fmt.Sprint(i)})
		n.irq(fixIRQ{irq: 50 + i, chip: "IR-PCI-MSIX-" + hca1, hwirq: i, handler: "edge", actions: []string{name + "@pci:" + hca1}, hot: 8 + i, aff: "0-15", eff: fmt.Sprint(8 + i)})
	}
	n.irq(fixIRQ{irq: 60, chip: "IR-PCI-MSIX-" + gpu0, hwirq: 0, handler: "edge", actions: []string{"nvidia"}, hot: 2, aff: "0-15", eff: "2"})
	n.irq(fixIRQ{irq: 61, chip: "IR-PCI-MSIX-" + gpu1, hwirq: 0, handler: "edge", actions: []string{"nvidia"}, hot: 10, aff: "0-15", eff: "10"})
	n.device(fixDev{bdf: gpu0, numa: 0, local: "0-7", msi: []int{60, 70}, intx: 16, realPath: "/sys/devices/pci0000:17/0000:17:00.0/" + gpu0})
	n.device(fixDev{bdf: hca0, numa: 0, local: "0-7", msi: []int{44, 40, 41, 42, 43}, intx: 16})
	n.device(fixDev{bdf: gpu1, numa: 1, local: "8-15", msi: []int{61}, intx: 17})
	n.device(fixDev{bdf: hca1, numa: 1, local: "8-15", msi: []int{50, 51, 52, 53, 54}})
	n.device(fixDev{bdf: nvme, numa: 0, local: "0-7", msi: []int{30, 31, 32}})
	return n
}

// TestPlacedDevicesDGX: on the dgxh100 capture, the eight GPUs and the
// HCAs /sys/class/infiniband links to (through <bdf>/infiniband/<dev>).
func TestPlacedDevicesDGX(t *testing.T) {
	r := host.NewRoot(testroot.Shared(t, "dgxh100"))
	ids, err := PlacedDevices(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0000:18:00.0", "0000:db:00.0", "0000:19:00.0"} {
		if !slices.Contains(ids, want) {
			t.Errorf("PlacedDevices = %v, missing %s", ids, want)
		}
	}
	if slices.Contains(ids, "0000:00:01.0") {
		t.Errorf("PlacedDevices = %v: a bridge is no GPU or HCA", ids)
	}
}
