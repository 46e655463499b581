package main

import (
	"fmt"
	"slices"
	"strings"

	"gpuprep/internal/topom"
)

// checkGres compares gpuprep-gres's JSON with topo -m, GPU by GPU: topo -m's
// GPUi is NVML index i, the gres device with gpu_index i.
func checkGres(r *report, m *topom.Matrix, g *gresFile) {
	devs := g.Gres.Devices
	byGPU := map[int][]int{} // NVML index -> record positions
	for p, d := range devs {
		byGPU[*d.GPUIndex] = append(byGPU[*d.GPUIndex], p)
	}
	if len(byGPU) != len(m.GPUs) {
		r.bad("GPU count: topo -m has %d GPUs, gres.json's devices cover %d (gpu_index %s)", len(m.GPUs), len(byGPU), joinKeys(byGPU))
	}
	for i := range byGPU {
		if i < 0 || i >= len(m.GPUs) {
			r.bad("GPU %d: gres.json has a device with gpu_index %d, topo -m has no GPU%d", i, i, i)
		}
	}
	checkLinks(r, m, g, byGPU)
	for _, tg := range m.GPUs {
		i := tg.Index
		recs := byGPU[i]
		if len(recs) == 0 {
			r.bad("GPU %d: no gres device with gpu_index %d", i, i)
			continue
		}
		d := devs[recs[0]]
		cpus, unknown := g.osCPUs(d.Cores)
		switch {
		case len(unknown) > 0:
			r.bad("GPU %d: Cores=%s of %s name core ids %v that node.cores does not have", i, d.Cores, d.File, unknown)
		case tg.CPUAffinity.IsEmpty():
			r.note("GPU %d: topo -m's CPU Affinity is N/A: Cores= not checked", i)
		case !cpus.Equal(tg.CPUAffinity):
			r.bad("GPU %d: Cores=%s (CPUs %s), topo -m CPU Affinity %s", i, d.Cores, cpus, tg.CPUAffinity)
		}
		ng := g.gpu(i)
		if ng == nil {
			r.bad("GPU %d: not in gres.json's node.gpus", i)
			continue
		}
		if !tg.CPUAffinity.IsEmpty() && !ng.CPUAffinity.Equal(tg.CPUAffinity) {
			r.bad("GPU %d: node.gpus cpu_affinity %s, topo -m CPU Affinity %s", i, ng.CPUAffinity, tg.CPUAffinity)
		}
		switch {
		case !m.HasNUMAAffinity:
		case tg.NUMANodes.Size() > 1:
			r.note("GPU %d: topo -m's NUMA Affinity is %s: numa %d not checked", i, tg.NUMANodes, ng.NUMA)
		case ng.NUMA != tg.NUMAAffinity:
			r.bad("GPU %d: numa %d, topo -m NUMA Affinity %s", i, ng.NUMA, numaString(tg.NUMAAffinity))
		}
		if tg.GPUNUMAID >= 0 && !slices.Contains(ng.MemoryNUMANodes, tg.GPUNUMAID) {
			r.bad("GPU %d: memory_numa_nodes %v, topo -m GPU NUMA ID %d", i, ng.MemoryNUMANodes, tg.GPUNUMAID)
		}
		checkNearNICs(r, m, tg, ng)
	}
}

// checkNearNICs compares a GPU's near_nics (the NICs gpuprep puts nearest
// it, with their PCIe path) with the NICs topo -m puts at the GPU's nearest
// level: the same names at the same level. gpuprep lists none when the
// nearest is across the CPU interconnect (SYS); NICs that topo -m does not
// show (plain Ethernet) are left out of the comparison.
func checkNearNICs(r *report, m *topom.Matrix, tg topom.GPU, ng *gresGPU) {
	if len(m.NICs) == 0 {
		return
	}
	var want []string
	if best, names := nearestNICs(tg, m.NICs); best < topom.SYS {
		for _, n := range names {
			want = append(want, n+"("+best.String()+")")
		}
	}
	var got []string
	for _, n := range ng.NearNICs {
		if slices.Contains(m.NICs, n.Name) {
			got = append(got, n.Name+"("+n.Path+")")
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		r.bad("GPU %d: near_nics %s, topo -m's nearest %s", tg.Index, orNone(got), orNone(want))
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// checkLinks compares each GPU's Links= (NVLink counts in gres record
// order, -1 for itself, 0 for no NVLink) with topo -m's row: X, NV# or a
// PCIe path (0).
func checkLinks(r *report, m *topom.Matrix, g *gresFile, byGPU map[int][]int) {
	devs := g.Gres.Devices
	anyLinks, anyMIG, nonZero := false, false, false
	for _, d := range devs {
		anyLinks = anyLinks || d.Links != nil
		anyMIG = anyMIG || d.MIG != ""
		for _, l := range d.Links {
			nonZero = nonZero || l > 0
		}
	}
	topoNV := false
	for _, tg := range m.GPUs {
		for _, c := range tg.Peers {
			topoNV = topoNV || c.NVLinks > 0
		}
	}
	blind := g.Node.GPUBackend == "procfs" || g.Node.GPUBackend == "none"
	switch {
	case anyMIG && !anyLinks:
		r.note("Links= not checked: gres.json has MIG devices, which leave Links= out")
		return
	case blind && !nonZero:
		r.note("Links= not checked: the %s GPU backend cannot see NVLinks", g.Node.GPUBackend)
		return
	case !anyLinks && !topoNV:
		return // no NVLinks on either side
	}
	for _, tg := range m.GPUs {
		recs := byGPU[tg.Index]
		if len(recs) == 0 {
			continue
		}
		links := devs[recs[0]].Links
		if links == nil {
			r.bad("GPU %d: no Links=, topo -m %s", tg.Index, cells(tg.Peers))
			continue
		}
		got := make([]int, len(tg.Peers))
		ok := len(links) == len(devs)
		for j := range tg.Peers {
			got[j] = -2 // no record for GPU j
			if pos := byGPU[j]; len(pos) > 0 && pos[0] < len(links) {
				got[j] = links[pos[0]]
			}
			if got[j] != want(tg.Peers[j]) {
				ok = false
			}
		}
		if !ok {
			r.bad("GPU %d: Links=%s (%s in GPU order), topo -m %s", tg.Index, ints(links), ints(got), cells(tg.Peers))
		}
	}
}

// want is the Links= value of a topo -m cell.
func want(c topom.Cell) int {
	if c.Self {
		return -1
	}
	return c.NVLinks
}

func cells(cs []topom.Cell) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, " ")
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func joinKeys(m map[int][]int) string {
	var k []int
	for i := range m {
		k = append(k, i)
	}
	slices.Sort(k)
	return ints(k)
}

func numaString(n int) string {
	if n < 0 {
		return "N/A"
	}
	return fmt.Sprint(n)
}
