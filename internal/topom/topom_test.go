package topom

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseCapturedH200 reads the real output of the 2x H200 node: tabs,
// the header underlined with ANSI escapes, an empty cell before GPU NUMA ID.
func TestParseCapturedH200(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(mustRead(t, filepath.Join(root, "test/roots/h200x2-ref/topo-m.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.GPUs) != 2 || len(m.NICs) != 0 || !m.HasNUMAAffinity || !m.HasGPUNUMAID {
		t.Fatalf("matrix %+v", m)
	}
	for i, g := range m.GPUs {
		if g.Index != i || g.Line != i+2 {
			t.Errorf("GPU%d: index %d line %d", i, g.Index, g.Line)
		}
		if !g.Peers[i].Self || g.Peers[1-i].NVLinks != 18 || g.Peers[1-i].String() != "NV18" {
			t.Errorf("GPU%d peers %v", i, g.Peers)
		}
		if !g.CPUAffinity.Equal(cpuset.Range(0, 31)) || g.NUMAAffinity != 0 || g.GPUNUMAID != -1 {
			t.Errorf("GPU%d: affinity %s numa %d gpu numa %d", i, g.CPUAffinity, g.NUMAAffinity, g.GPUNUMAID)
		}
	}
}

// TestParseDGXLike reads a DGX H100-like node: 8 GPUs on NVSwitch, SMT
// CPU lists on two NUMA nodes, 10 NIC columns named by the NIC legend; and
// the same text as a terminal copy with spaces instead of tabs.
func TestParseDGXLike(t *testing.T) {
	text := mustRead(t, "testdata/dgxh100-like.txt")
	spaced := regexp.MustCompile("\t+").ReplaceAllString(string(text), "    ")
	for name, in := range map[string][]byte{"tabs": text, "spaces": []byte(spaced)} {
		t.Run(name, func(t *testing.T) {
			m, err := Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.GPUs) != 8 || len(m.NICs) != 10 {
				t.Fatalf("%d GPUs, NICs %v", len(m.GPUs), m.NICs)
			}
			for j, name := range m.NICs {
				if want := "mlx5_" + string(rune('0'+j)); name != want || m.NICColumns[j] != "NIC"+string(rune('0'+j)) {
					t.Errorf("NIC column %d: %q (%q), want %s", j, name, m.NICColumns[j], want)
				}
			}
			for i, g := range m.GPUs {
				for j, c := range g.Peers {
					if (i == j) != c.Self || (i != j && c.NVLinks != 18) {
						t.Errorf("GPU%d->GPU%d: %v", i, j, c)
					}
				}
				numa, cpus := 0, "0-55,112-167"
				if i >= 4 {
					numa, cpus = 1, "56-111,168-223"
				}
				if g.NUMAAffinity != numa || g.CPUAffinity.String() != cpus || g.GPUNUMAID != -1 {
					t.Errorf("GPU%d: numa %d cpus %s", i, g.NUMAAffinity, g.CPUAffinity)
				}
				if g.NICs[i] != PIX {
					t.Errorf("GPU%d: its own NIC is %v, want PIX", i, g.NICs[i])
				}
			}
			// GPU0: mlx5_0 PIX, mlx5_1-3 and mlx5_9... as written.
			want := []Path{PIX, NODE, NODE, NODE, SYS, SYS, SYS, SYS, PXB, SYS}
			for j, p := range m.GPUs[0].NICs {
				if p != want[j] {
					t.Errorf("GPU0 NIC%d: %v, want %v", j, p, want[j])
				}
			}
			if m.GPUs[5].NICs[9] != PXB || m.GPUs[6].NICs[9] != NODE {
				t.Errorf("GPU5/6 to NIC9: %v %v", m.GPUs[5].NICs[9], m.GPUs[6].NICs[9])
			}
		})
	}
}

// An older driver: NIC columns named by device, no NIC legend, SOC for
// the SMP interconnect, no NUMA Affinity or GPU NUMA ID columns.
const oldDriver = `        GPU0    GPU1    GPU2    GPU3    mlx4_0  CPU Affinity
GPU0     X      PIX     SOC     SOC     PHB     0-9,20-29
GPU1    PIX      X      SOC     SOC     PHB     0-9,20-29
GPU2    SOC     SOC      X      NV2     SOC     10-19,30-39
GPU3    SOC     SOC     NV2      X      SOC     10-19,30-39
mlx4_0  PHB     PHB     SOC     SOC      X

Legend:

  X   = Self
  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe switches (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing a single PCIe switch
  NV#  = Connection traversing a bonded set of # NVLinks
`

func TestParseOldDriver(t *testing.T) {
	m, err := Parse([]byte(oldDriver))
	if err != nil {
		t.Fatal(err)
	}
	if m.HasNUMAAffinity || m.HasGPUNUMAID || len(m.NICs) != 1 || m.NICs[0] != "mlx4_0" {
		t.Fatalf("matrix %+v", m)
	}
	g := m.GPUs[0]
	if g.Peers[1].Path != PIX || g.Peers[2].Path != SYS || g.Peers[2].String() != "SYS" || g.NICs[0] != PHB {
		t.Errorf("GPU0 %v %v", g.Peers, g.NICs)
	}
	if m.GPUs[2].Peers[3].NVLinks != 2 || m.GPUs[3].CPUAffinity.String() != "10-19,30-39" || m.GPUs[3].NUMAAffinity != -1 {
		t.Errorf("GPU2/3 %+v %+v", m.GPUs[2], m.GPUs[3])
	}
}

// N/A affinities (a VM, a Tesla P4), a Grace Hopper GPU NUMA ID, and lines
// the parser does not know (MIG notes) between the rows.
func TestParseNAAndExtraLines(t *testing.T) {
	text := "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n" +
		"GPU0\t X \tSYS\t0-71\t0\t\t4\n" +
		"  MIG 3g.48gb Device 0: (UUID: MIG-abc)\n" +
		"GPU1\tSYS\t X \tN/A\tN/A\t\tN/A\n" +
		"nonsense line\n\nLegend:\n\n  X    = Self\n  GPU0 = not a row\n"
	m, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.GPUs[0].GPUNUMAID != 4 || m.GPUs[0].NUMAAffinity != 0 || m.GPUs[0].CPUAffinity.String() != "0-71" {
		t.Errorf("GPU0 %+v", m.GPUs[0])
	}
	if g := m.GPUs[1]; g.NUMAAffinity != -1 || g.GPUNUMAID != -1 || !g.CPUAffinity.IsEmpty() {
		t.Errorf("GPU1 %+v", g)
	}
}

func TestParseErrors(t *testing.T) {
	hdr := "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
	cases := map[string]struct{ text, want string }{
		"empty":          {"", "line 1: no header"},
		"garbage":        {"\x00\xff binary \x1b[ junk\nGPU0 GPU0\n", "no header"},
		"missing row":    {hdr + "GPU0\t X \tNV4\t0-3\t0\n", "line 1: no row for GPU1"},
		"short row":      {hdr + "GPU0\t X \tNV4\t0-3\n", "line 2: GPU0: 3 fields, the header has 4 columns"},
		"bad cell":       {hdr + "GPU0\t X \tNVx\t0-3\t0\nGPU1\tNV4\t X \t0-3\t0\n", `line 2: GPU0: column GPU1: "NVx"`},
		"X off diagonal": {hdr + "GPU0\t X \tNV4\t0-3\t0\nGPU1\t X \tNV4\t0-3\t0\n", "line 3: GPU1: column GPU0"},
		"bad cpus":       {hdr + "GPU0\t X \tNV4\t3-1\t0\nGPU1\tNV4\t X \t0-3\t0\n", "line 2: GPU0: CPU Affinity"},
		"bad numa":       {hdr + "GPU0\t X \tNV4\t0-3\tx\nGPU1\tNV4\t X \t0-3\t0\n", `line 2: GPU0: NUMA Affinity "x"`},
		"twice":          {hdr + "GPU0\t X \tNV4\t0-3\t0\nGPU0\t X \tNV4\t0-3\t0\n", "line 3: a second row for GPU0"},
		"beyond header":  {hdr + "GPU2\t X \tNV4\t0-3\t0\n", "line 2: row GPU2, but the header has 2 GPU columns"},
		"gap in header":  {"\tGPU0\tGPU2\tCPU Affinity\n", `line 1: header: column "GPU2" where GPU1 was expected`},
		"bad nic":        {"\tGPU0\tNIC0\tCPU Affinity\nGPU0\t X \tNV1\t0\n", `line 2: GPU0: NIC column 0: "NV1"`},
	}
	for name, c := range cases {
		_, err := Parse([]byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", name, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(oldDriver))
	if b, err := os.ReadFile("testdata/dgxh100-like.txt"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-7\t\tN/A\t\tN/A\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		for i, g := range m.GPUs {
			if g.Index != i || len(g.Peers) != len(m.GPUs) || len(g.NICs) != len(m.NICs) || !g.Peers[i].Self {
				t.Fatalf("inconsistent GPU%d: %+v", i, g)
			}
		}
	})
}
