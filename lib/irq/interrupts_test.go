package irq

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/host"
)

// TestParseInterruptsSamples reads /proc/interrupts as kernels print it:
// one captured on an H200 VM (Linux 6.18), and three written in the
// kernel's format (kernel/irq/proc.c, show_interrupts) for machines we
// have no capture of: Linux 6.1 on a 2-socket x86 node (one "IR-PCI-MSI"
// chip, hwirq encoding the device), Linux 6.8 on the same node
// (per-device "IR-PCI-MSIX-<bdf>" chips), and an arm64 node with the
// trigger column and CPU 2 offline.
func TestParseInterruptsSamples(t *testing.T) {
	type row struct {
		irq     int
		chip    string
		hwirq   int64
		handler string
		trigger string
		actions []string
		total   uint64
	}
	cases := []struct {
		file  string
		cpus  []int
		nIRQs int
		rows  []row
	}{
		{"interrupts-x86-6.1.txt", []int{0, 1, 2, 3, 4, 5, 6, 7}, 25, []row{
			{0, "IR-IO-APIC", 2, "edge", "", []string{"timer"}, 44},
			{9, "IR-IO-APIC", 9, "fasteoi", "", []string{"acpi"}, 485895},
			{26, "IR-PCI-MSI", 458752, "edge", "", []string{"PCIe PME", "pciehp"}, 409620},
			{28, "IR-PCI-MSI", 376832, "edge", "", []string{"ahci[0000:00:17.0]"}, 498342},
			{44, "IR-PCI-MSI", 13631492, "edge", "", []string{"mlx5_comp3@pci:0000:1a:00.0"}, 56875414},
			{60, "IR-PCI-MSI", 12582912, "edge", "", []string{"nvidia"}, 35888396},
			{70, "IR-PCI-MSI", 12582913, "edge", "", nil, 3},
		}},
		{"interrupts-x86-6.8.txt", []int{0, 1, 2, 3, 4, 5, 6, 7}, 25, []row{
			{24, "DMAR-MSI", 0, "edge", "", []string{"dmar0"}, 0},
			{26, "IR-PCI-MSI-0000:00:1c.0", 0, "edge", "", []string{"PCIe PME", "pciehp"}, 409620},
			{31, "IR-PCI-MSIX-0000:05:00.0", 1, "edge", "", []string{"nvme0q1"}, 468892},
			{53, "IR-PCI-MSIX-0000:9c:00.0", 3, "edge", "", []string{"mlx5_comp2@pci:0000:9c:00.0"}, 17489964},
			{61, "IR-PCI-MSIX-0000:9a:00.0", 0, "edge", "", []string{"nvidia"}, 59670655},
			{70, "IR-PCI-MSIX-0000:18:00.0", 1, "edge", "", nil, 3},
		}},
		// Captured on a one-GPU H200 VM (Linux 6.18, 16 CPUs, read-only):
		// the driver's 8 MSI-X vectors; its INTx line (41) is not requested.
		{"interrupts-h200-vm-6.18.txt", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 24, []row{
			{26, "IO-APIC", 4, "edge", "", []string{"ttyS0"}, 15},
			{31, "PCI-MSIX-0000:00:01.0", 1, "edge", "", []string{"virtio0-req.0"}, 910},
			{42, "PCI-MSIX-0000:00:06.0", 0, "edge", "", []string{"nvidia"}, 0},
			{44, "PCI-MSIX-0000:00:06.0", 2, "edge", "", []string{"nvidia"}, 14},
			{49, "PCI-MSIX-0000:00:06.0", 7, "edge", "", []string{"nvidia"}, 0},
		}},
		{"interrupts-arm64.txt", []int{0, 1, 3}, 8, []row{
			{10, "GICv3", 27, "", "Level", []string{"arch_timer"}, 8123456 + 7012345 + 6543210},
			{50, "ITS-MSI", 524288, "", "Edge", []string{"nvme0q0"}, 35},
			{90, "ITS-PCI-MSIX-0009:01:00.0", 0, "", "Edge", []string{"nvidia"}, 991245},
			{91, "ITS-PCI-MSIX-0009:01:00.0", 1, "", "Edge", nil, 0},
			{100, "mbigen", 67, "fasteoi", "Level", []string{"ipmi_si"}, 2},
		}},
	}
	for _, tc := range cases {
		b, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		in, err := ParseInterrupts(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !slices.Equal(in.CPUs, tc.cpus) || len(in.IRQs) != tc.nIRQs {
			t.Errorf("%s: CPUs %v, %d IRQs; want %v, %d", tc.file, in.CPUs, len(in.IRQs), tc.cpus, tc.nIRQs)
		}
		for _, i := range in.IRQs {
			if len(i.Counts) != len(in.CPUs) {
				t.Errorf("%s: IRQ %d has %d counts", tc.file, i.IRQ, len(i.Counts))
			}
		}
		for _, w := range tc.rows {
			g, ok := in.Find(w.irq)
			if !ok {
				t.Errorf("%s: IRQ %d missing", tc.file, w.irq)
				continue
			}
			if g.Chip != w.chip || g.HWIRQ != w.hwirq || g.Handler != w.handler || g.Trigger != w.trigger ||
				!slices.Equal(g.Actions, w.actions) || g.Total() != w.total {
				t.Errorf("%s: IRQ %d = %q %d %q %q %q total %d; want %q %d %q %q %q total %d", tc.file, w.irq,
					g.Chip, g.HWIRQ, g.Handler, g.Trigger, g.Actions, g.Total(),
					w.chip, w.hwirq, w.handler, w.trigger, w.actions, w.total)
			}
		}
		if _, ok := in.Find(1); ok {
			t.Errorf("%s: IRQ 1 found", tc.file)
		}
	}
}

// TestParseInterruptsEdgeCases: a chip without a domain (no hwirq before
// the handler), a single CPU, rows without actions, a trailing line
// without a newline.
func TestParseInterruptsEdgeCases(t *testing.T) {
	text := "           CPU0\n" +
		"  0:         41   IO-APIC   2-edge      timer\n" +
		"  7:          0   XT-PIC     -XT       \n" +
		"  8:          1      None\n" +
		"NMI:          0   Non-maskable interrupts\n" +
		" 11:          5   PCI-MSI  -edge      eth0-TxRx-0, eth0"
	in, err := ParseInterrupts([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Interrupt{
		{IRQ: 0, Counts: []uint64{41}, Chip: "IO-APIC", HWIRQ: 2, Handler: "edge", Actions: []string{"timer"}},
		{IRQ: 7, Counts: []uint64{0}, Chip: "XT-PIC", HWIRQ: -1, Handler: "XT"},
		{IRQ: 8, Counts: []uint64{1}, Chip: "None", HWIRQ: -1},
		{IRQ: 11, Counts: []uint64{5}, Chip: "PCI-MSI", HWIRQ: -1, Handler: "edge", Actions: []string{"eth0-TxRx-0", "eth0"}},
	}
	if len(in.IRQs) != len(want) {
		t.Fatalf("IRQs = %+v", in.IRQs)
	}
	for i, w := range want {
		g := in.IRQs[i]
		if g.IRQ != w.IRQ || !slices.Equal(g.Counts, w.Counts) || g.Chip != w.Chip || g.HWIRQ != w.HWIRQ ||
			g.Handler != w.Handler || g.Trigger != w.Trigger || !slices.Equal(g.Actions, w.Actions) {
			t.Errorf("row %d = %+v; want %+v", i, g, w)
		}
	}
}

// TestParseInterruptsGarbage: what the kernel never writes is an error
// naming /proc/interrupts and the line.
func TestParseInterruptsGarbage(t *testing.T) {
	hdr := "           CPU0       CPU1\n"
	for _, tc := range []struct{ text, want string }{
		{"", "/proc/interrupts: empty"},
		{"\n\n", "/proc/interrupts: empty"},
		{"  0:  1  2  IO-APIC 2-edge timer\n", "/proc/interrupts:1: header: want CPU<n> columns, found \"0:\""},
		{"   CPU1  CPU0\n", "/proc/interrupts:1: header: CPU0 after CPU1"},
		{"   CPU00\n", "/proc/interrupts:1: header: want CPU<n> columns, found \"CPU00\""},
		{"   CPU99999\n", "/proc/interrupts:1: header: want CPU<n> columns"},
		{hdr + "  0:  1  IO-APIC 2-edge timer\n", "/proc/interrupts:2: IRQ 0: count \"IO-APIC\" for the CPU column 2 is not a number"},
		{hdr + "  0:  1\n", "/proc/interrupts:2: IRQ 0: 1 counts for 2 CPU columns"},
		{hdr + "  0:  1  2\n", "/proc/interrupts:2: IRQ 0: no chip column after the counts"},
		{hdr + "  0:  1  -2  IO-APIC\n", "/proc/interrupts:2: IRQ 0: count \"-2\" for the CPU column 2 is not a number"},
		{hdr + "  0:  1  99999999999999999999  IO-APIC\n", "/proc/interrupts:2: IRQ 0: count \"99999999999999999999\""},
		{hdr + "  0:  1  2  IO-APIC 2-edge timer\n  0:  1  2  IO-APIC 2-edge timer\n", "/proc/interrupts:3: IRQ 0 listed twice"},
		{hdr + " 1x:  1  2  IO-APIC 2-edge timer\n", "/proc/interrupts:2: \"1x\" is not an IRQ number"},
		{hdr + " 99999999:  1  2  IO-APIC\n", "/proc/interrupts:2: IRQ 99999999 is out of range"},
		{hdr + "garbage without a colon\n", "/proc/interrupts:2: want \"<irq>:\" or \"<name>:\""},
		{hdr + ": 1 2\n", "/proc/interrupts:2: want \"<irq>:\""},
		{hdr + "  5:  1  2  PCI-MSI 99999999999999999999-edge eth0\n", "/proc/interrupts:2: IRQ 5: hwirq \"99999999999999999999\" is out of range"},
	} {
		_, err := ParseInterrupts([]byte(tc.text))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseInterrupts(%q) = %v; want %q...", tc.text, err, tc.want)
		}
	}
}

// TestReadInterruptsFixture reads the fixture node's file through a Root.
func TestReadInterruptsFixture(t *testing.T) {
	r := twoSocket(t).finish()
	in, err := ReadInterrupts(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.CPUs) != 16 || len(in.IRQs) != 19 {
		t.Fatalf("CPUs %v, %d IRQs", in.CPUs, len(in.IRQs))
	}
	g, _ := in.Find(42)
	if g.Chip != "IR-PCI-MSIX-"+hca0 || g.HWIRQ != 2 || !slices.Equal(g.Actions, []string{"mlx5_comp1@pci:" + hca0}) || g.Counts[2] != 1042 {
		t.Errorf("IRQ 42 = %+v", g)
	}
	if _, err := ReadInterrupts(newNode(t, 1).r); err == nil || !strings.Contains(err.Error(), "/proc/interrupts") {
		t.Errorf("missing file: %v", err)
	}
}

// ParseIRQNumbers lists what ParseInterrupts lists, and refuses what it
// refuses in the labels.
func TestParseIRQNumbers(t *testing.T) {
	text := "           CPU0       CPU1\n" +
		"  0:         36          0   IO-APIC   2-edge      timer\n" +
		" 24:          0         12  IR-PCI-MSIX-0000:18:00.0    0-edge      nvidia\n" +
		"NMI:          0          0   Non-maskable interrupts\n" +
		"171:  0  52  IR-PCI-MSIX-0000:18:00.0    1-edge      mlx5_comp0@pci:0000:18:00.0\n"
	got, err := ParseIRQNumbers([]byte(text))
	in, err2 := ParseInterrupts([]byte(text))
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	var want []int
	for _, i := range in.IRQs {
		want = append(want, i.IRQ)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(got) != "[0 24 171]" {
		t.Errorf("ParseIRQNumbers %v, ParseInterrupts %v", got, want)
	}
	for bad, msg := range map[string]string{
		"":                           "empty",
		"CPU0\n 4 x: 1 chip\n":       `/proc/interrupts:2: want "<irq>:"`,
		"CPU0\n  4: 1 c\n  4: 1 c\n": "/proc/interrupts:3: IRQ 4 listed twice",
		"CPU0\n99999999: 1 c\n":      "out of range",
		"CPU1 CPU0\n":                "CPU0 after CPU1",
		"CPU0\nno colon here\n":      "want",
	} {
		_, err := ParseIRQNumbers([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error with %q", bad, err, msg)
		}
	}
}

// ReadIRQNumbers reads a file whose rows are longer than its buffer: a
// node of thousands of CPUs.
func TestReadIRQNumbersLongRows(t *testing.T) {
	var b strings.Builder
	for c := range 8000 {
		fmt.Fprintf(&b, " CPU%d", c)
	}
	b.WriteString("\n")
	for _, irq := range []int{7, 24, 1000} {
		fmt.Fprintf(&b, "%d:%s  IR-PCI-MSIX-0000:18:00.0 0-edge nvidia\n", irq, strings.Repeat(" 0", 8000))
	}
	b.WriteString("NMI:" + strings.Repeat(" 0", 8000) + " Non-maskable interrupts")
	dir := t.TempDir()
	os.MkdirAll(dir+"/proc", 0o755)
	os.WriteFile(dir+"/proc/interrupts", []byte(b.String()), 0o644)
	got, err := ReadIRQNumbers(host.NewRoot(dir))
	if err != nil || fmt.Sprint(got) != "[7 24 1000]" {
		t.Errorf("ReadIRQNumbers: %v, %v", got, err)
	}
}
