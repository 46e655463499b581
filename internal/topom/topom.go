// Package topom parses the text of `nvidia-smi topo -m`: the matrix of how
// every GPU reaches every other GPU and every NIC (NVLinks or the PCIe path
// level), each GPU's CPU and NUMA affinity, and the NIC legend. It is an
// independent reference for gpuprep's own reading of a node (see
// test/topocheck). Parsing is pure.
//
// The text has a header row (GPU0..GPUn-1, NIC columns, then "CPU Affinity",
// "NUMA Affinity" and, on newer drivers, "GPU NUMA ID"), one row per GPU and
// per NIC, a "Legend:" block and, with NICs, a "NIC Legend:" block mapping
// NIC0 to mlx5_0. Older drivers name NIC columns by device (mlx5_0) and have
// no NIC legend. Cells are separated by tabs in the real output and by
// spaces where it was copied from a terminal; both are read. The header's
// ANSI underline escape is ignored, and so are lines that are neither a
// header, a GPU or NIC row nor part of a legend (MIG notes, banners).
package topom

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
)

// Path is a PCIe path level between two devices, nearest first.
type Path int

// Path levels, in nvidia-smi's legend order from nearest to farthest.
const (
	PathNone Path = iota // no PCIe path given (the cell is X or NV#)
	PIX                  // at most a single PCIe bridge
	PXB                  // multiple PCIe bridges, no host bridge
	PHB                  // a PCIe host bridge (the CPU)
	NODE                 // host bridges within one NUMA node
	SYS                  // the SMP interconnect between NUMA nodes (older drivers: SOC)
)

var pathNames = map[string]Path{"PIX": PIX, "PXB": PXB, "PHB": PHB, "NODE": NODE, "SYS": SYS, "SOC": SYS}

// String is the level as nvidia-smi prints it (SOC reads as SYS).
func (p Path) String() string {
	switch p {
	case PIX:
		return "PIX"
	case PXB:
		return "PXB"
	case PHB:
		return "PHB"
	case NODE:
		return "NODE"
	case SYS:
		return "SYS"
	}
	return "-"
}

// Cell is one GPU-to-GPU entry of the matrix: the GPU itself (X), a bonded
// set of NVLinks (NV#), or a PCIe path.
type Cell struct {
	Self    bool
	NVLinks int  // the # of NV#; 0 for X and PCIe paths
	Path    Path // PathNone for X and NV#
}

// String is the cell as nvidia-smi prints it.
func (c Cell) String() string {
	switch {
	case c.Self:
		return "X"
	case c.NVLinks > 0:
		return fmt.Sprintf("NV%d", c.NVLinks)
	}
	return c.Path.String()
}

// GPU is one GPU row.
type GPU struct {
	Index int // the N of GPUN (NVML index, PCI bus order)
	Line  int // 1-based line number of the row
	// Peers are the cells to GPU0..GPUn-1, Peers[Index] is Self.
	Peers []Cell
	// NICs are the path levels to each NIC column, as Matrix.NICs.
	NICs []Path
	// CPUAffinity is the "CPU Affinity" cell; empty when it reads N/A.
	CPUAffinity cpuset.Set
	// NUMAAffinity is the "NUMA Affinity" cell when it names one node, -1
	// when N/A, absent (older drivers) or a list; NUMANodes holds the list.
	NUMAAffinity int
	NUMANodes    cpuset.Set
	// GPUNUMAID is the "GPU NUMA ID" cell (the GPU memory's own NUMA node
	// on Grace Hopper), -1 when N/A or absent.
	GPUNUMAID int
}

// Matrix is a parsed `nvidia-smi topo -m`.
type Matrix struct {
	GPUs []GPU // by index: GPUs[i].Index == i
	// NICs name the NIC columns: the NIC Legend's device (mlx5_0) where
	// there is one, else the column header (NIC0 or, on older drivers,
	// the device itself).
	NICs []string
	// NICColumns are the NIC column headers as printed (NIC0).
	NICColumns []string
	// HasNUMAAffinity and HasGPUNUMAID say whether those columns exist.
	HasNUMAAffinity, HasGPUNUMAID bool
}

// column kinds of the header after the GPU and NIC columns.
const (
	colCPU = iota
	colNUMA
	colGPUNUMA
	colOther
)

// multiWord are the header names of more than one word, as the word lists
// a whitespace split gives.
var multiWord = []struct {
	words []string
	kind  int
}{
	{[]string{"CPU", "Affinity"}, colCPU},
	{[]string{"NUMA", "Affinity"}, colNUMA},
	{[]string{"GPU", "NUMA", "ID"}, colGPUNUMA},
}

// Parse reads the text of `nvidia-smi topo -m`. An error names the line
// (1-based) and what is wrong with it.
func Parse(text []byte) (*Matrix, error) {
	lines := strings.Split(string(bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n"))), "\n")
	m := &Matrix{}
	var tail []int // kinds of the columns after the NIC columns
	header := 0    // line number of the header; 0 before it
	nicCol := map[string]int{}
	seen := map[int]bool{}
	legend, nicLegend := false, false
	for n, raw := range lines {
		ln := n + 1
		f := strings.Fields(stripANSI(raw))
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "Legend:":
			legend, nicLegend = true, false
			continue
		case len(f) >= 2 && f[0] == "NIC" && f[1] == "Legend:":
			legend, nicLegend = true, true
			continue
		case nicLegend:
			// "NIC0: mlx5_0"
			if len(f) == 2 && strings.HasSuffix(f[0], ":") {
				if i, ok := nicCol[strings.TrimSuffix(f[0], ":")]; ok {
					m.NICs[i] = f[1]
				}
			}
			continue
		case legend:
			continue
		case header == 0:
			if f[0] == "GPU0" && contains(f, "Affinity") {
				var err error
				if tail, err = m.parseHeader(f); err != nil {
					return nil, fmt.Errorf("line %d: header: %w", ln, err)
				}
				for i, c := range m.NICColumns {
					nicCol[c] = i
				}
				header = ln
			}
			continue
		}
		idx, isGPU := gpuName(f[0])
		if !isGPU || idx < 0 {
			continue // NIC rows, MIG notes and anything else
		}
		if idx >= len(m.GPUs) {
			return nil, fmt.Errorf("line %d: row GPU%d, but the header has %d GPU columns", ln, idx, len(m.GPUs))
		}
		if seen[idx] {
			return nil, fmt.Errorf("line %d: a second row for GPU%d", ln, idx)
		}
		seen[idx] = true
		g, err := parseRow(f[1:], idx, len(m.GPUs), len(m.NICColumns), tail)
		if err != nil {
			return nil, fmt.Errorf("line %d: GPU%d: %w", ln, idx, err)
		}
		g.Line = ln
		m.GPUs[idx] = g
	}
	if header == 0 {
		return nil, fmt.Errorf("line %d: no header line (GPU0 ... CPU Affinity) found", len(lines))
	}
	for i := range m.GPUs {
		if !seen[i] {
			return nil, fmt.Errorf("line %d: no row for GPU%d, which the header names", header, i)
		}
	}
	return m, nil
}

// parseHeader reads the header words: GPU columns, NIC columns, then the
// affinity columns; it sizes m and returns the kinds of the tail columns.
func (m *Matrix) parseHeader(f []string) ([]int, error) {
	i, ngpu := 0, 0
	for ; i < len(f); i++ {
		idx, ok := gpuName(f[i])
		if !ok || wordsAt(f, i) >= 0 {
			break
		}
		if idx != ngpu {
			return nil, fmt.Errorf("column %q where GPU%d was expected", f[i], ngpu)
		}
		ngpu++
	}
	for ; i < len(f) && wordsAt(f, i) < 0; i++ {
		m.NICColumns = append(m.NICColumns, f[i])
	}
	var tail []int
	for i < len(f) {
		k := wordsAt(f, i)
		if k < 0 {
			tail = append(tail, colOther)
			i++
			continue
		}
		tail = append(tail, multiWord[k].kind)
		i += len(multiWord[k].words)
	}
	if !containsInt(tail, colCPU) {
		return nil, fmt.Errorf("no CPU Affinity column")
	}
	m.HasNUMAAffinity, m.HasGPUNUMAID = containsInt(tail, colNUMA), containsInt(tail, colGPUNUMA)
	m.GPUs = make([]GPU, ngpu)
	m.NICs = append([]string(nil), m.NICColumns...)
	return tail, nil
}

// wordsAt is the index in multiWord of the name starting at f[i], or -1.
func wordsAt(f []string, i int) int {
	for k, mw := range multiWord {
		if i+len(mw.words) <= len(f) && equalFold(f[i:i+len(mw.words)], mw.words) {
			return k
		}
	}
	return -1
}

// parseRow reads a GPU row's fields after its name.
func parseRow(f []string, idx, ngpu, nnic int, tail []int) (GPU, error) {
	if want := ngpu + nnic + len(tail); len(f) != want {
		return GPU{}, fmt.Errorf("%d fields, the header has %d columns", len(f), want)
	}
	g := GPU{Index: idx, NUMAAffinity: -1, GPUNUMAID: -1}
	for j := 0; j < ngpu; j++ {
		c, err := parseCell(f[j])
		if err != nil {
			return GPU{}, fmt.Errorf("column GPU%d: %w", j, err)
		}
		if c.Self != (j == idx) {
			return GPU{}, fmt.Errorf("column GPU%d: %q (X belongs on the diagonal only)", j, f[j])
		}
		g.Peers = append(g.Peers, c)
	}
	for j := 0; j < nnic; j++ {
		p, ok := pathNames[f[ngpu+j]]
		if !ok {
			return GPU{}, fmt.Errorf("NIC column %d: %q is not a PCIe path level (PIX PXB PHB NODE SYS SOC)", j, f[ngpu+j])
		}
		g.NICs = append(g.NICs, p)
	}
	for k, kind := range tail {
		v := f[ngpu+nnic+k]
		var err error
		switch kind {
		case colCPU:
			if v != "N/A" {
				if g.CPUAffinity, err = cpuset.Parse(v); err != nil {
					return GPU{}, fmt.Errorf("CPU Affinity: %w", err)
				}
			}
		case colNUMA:
			if v != "N/A" {
				if g.NUMANodes, err = cpuset.Parse(v); err != nil || g.NUMANodes.IsEmpty() {
					return GPU{}, fmt.Errorf("NUMA Affinity %q is not a NUMA node or N/A", v)
				}
				if g.NUMANodes.Size() == 1 {
					g.NUMAAffinity = g.NUMANodes.Min()
				}
			}
		case colGPUNUMA:
			if v != "N/A" {
				if g.GPUNUMAID, err = strconv.Atoi(v); err != nil || g.GPUNUMAID < 0 {
					return GPU{}, fmt.Errorf("GPU NUMA ID %q is not a NUMA node or N/A", v)
				}
			}
		}
	}
	return g, nil
}

// parseCell reads X, NV#, or a PCIe path level.
func parseCell(s string) (Cell, error) {
	if s == "X" {
		return Cell{Self: true}, nil
	}
	if n, ok := strings.CutPrefix(s, "NV"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v <= 0 || v > 1000 {
			return Cell{}, fmt.Errorf("%q is not a count of NVLinks", s)
		}
		return Cell{NVLinks: v}, nil
	}
	if p, ok := pathNames[s]; ok {
		return Cell{Path: p}, nil
	}
	return Cell{}, fmt.Errorf("%q is not X, NV# or a PCIe path level", s)
}

// gpuName reads "GPU<n>".
func gpuName(s string) (int, bool) {
	n, ok := strings.CutPrefix(s, "GPU")
	if !ok || n == "" || len(n) > 4 {
		return 0, false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	v, _ := strconv.Atoi(n)
	return v, true
}

// stripANSI removes ANSI escape sequences (ESC [ ... final byte), such as
// the underline nvidia-smi puts around its header on a terminal.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		}
	}
	return b.String()
}

func contains(f []string, w string) bool {
	for _, s := range f {
		if s == w {
			return true
		}
	}
	return false
}

func containsInt(f []int, v int) bool {
	for _, s := range f {
		if s == v {
			return true
		}
	}
	return false
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
