package main

import (
	"fmt"
	"slices"
	"strings"

	"gpuprep/internal/topom"
	"gpuprep/lib/cpuset"
)

// checkRanks compares srunwrap's per-rank plans with topo -m: GPUs, CPUs,
// memory and HCAs; with g (gres.json, may be nil) also whole cores.
func checkRanks(r *report, m *topom.Matrix, x *explainFile, g *gresFile) {
	if len(x.Ranks) == 0 {
		r.bad("no ranks in the explanation")
		return
	}
	ngpu := len(m.GPUs)
	users := make([][]int, ngpu) // GPU -> local ids
	cpus := make([]cpuset.Set, len(x.Ranks))
	multiNUMA := numaCount(m) > 1 || (g != nil && g.cpuNUMANodes() > 1)
	for k, rk := range x.Ranks {
		id := rk.LocalID
		set, err := cpuset.Parse(rk.CPUs)
		switch {
		case err != nil:
			r.bad("rank %d: cpus %q: %v", id, rk.CPUs, err)
		case set.IsEmpty():
			r.bad("rank %d: no CPUs (left unbound)", id)
		}
		cpus[k] = set
		if rk.GPU == nil {
			r.bad("rank %d: no GPU", id)
			continue
		}
		gi := rk.GPU.Index
		if gi < 0 || gi >= ngpu {
			r.bad("rank %d: GPU %d, topo -m has GPU0-GPU%d", id, gi, ngpu-1)
			continue
		}
		users[gi] = append(users[gi], id)
		tg := m.GPUs[gi]
		if tg.NUMAAffinity >= 0 && rk.GPU.NUMA != tg.NUMAAffinity {
			r.bad("rank %d: GPU %d numa %d, topo -m NUMA Affinity %d", id, gi, rk.GPU.NUMA, tg.NUMAAffinity)
		}
		if !set.IsEmpty() && !tg.CPUAffinity.IsEmpty() && !set.IsSubsetOf(tg.CPUAffinity) {
			r.bad("rank %d: CPUs %s (GPU %d), %s outside topo -m CPU Affinity %s", id, set, gi, set.Difference(tg.CPUAffinity), tg.CPUAffinity)
		}
		checkMemory(r, id, gi, tg, rk, multiNUMA)
		checkHCAs(r, id, gi, tg, m.NICs, rk.HCAs)
		if g != nil && !set.IsEmpty() {
			checkWholeCores(r, id, set, g)
		}
	}
	checkGPUShare(r, users, len(x.Ranks))
	for a := range cpus {
		for b := a + 1; b < len(cpus); b++ {
			if both := cpus[a].Intersection(cpus[b]); !both.IsEmpty() {
				r.bad("ranks %d and %d share CPUs %s", x.Ranks[a].LocalID, x.Ranks[b].LocalID, both)
			}
		}
	}
}

// checkGPUShare checks that the ranks share the GPUs evenly: each GPU
// exactly once when there are as many ranks as GPUs, else each GPU by
// n/GPUs ranks (rounded down or up) and no GPU twice while one is unused.
func checkGPUShare(r *report, users [][]int, n int) {
	lo, hi := n/len(users), (n+len(users)-1)/len(users)
	for gi, u := range users {
		if len(u) < lo || len(u) > hi {
			if n == len(users) {
				r.bad("GPU %d: used by %d ranks %v, want exactly one (%d ranks on %d GPUs)", gi, len(u), u, n, len(users))
			} else {
				r.bad("GPU %d: used by %d ranks %v, want %s (%d ranks on %d GPUs)", gi, len(u), u, span(lo, hi), n, len(users))
			}
		}
	}
}

func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d or %d", lo, hi)
}

// checkMemory: on a node of several NUMA nodes the rank's memory is bound
// to its GPU's NUMA node (topo -m's NUMA Affinity); with N/A anything goes.
func checkMemory(r *report, id, gi int, tg topom.GPU, rk rankRecord, multiNUMA bool) {
	if tg.NUMAAffinity < 0 {
		return
	}
	set := len(rk.MemNodes) > 0 && rk.MemPolicy != "off" && rk.MemPolicy != ""
	want := []int{tg.NUMAAffinity}
	switch {
	case set && !slices.Equal(rk.MemNodes, want):
		r.bad("rank %d: memory %s %v, GPU %d's NUMA Affinity %d", id, rk.MemPolicy, rk.MemNodes, gi, tg.NUMAAffinity)
	case !set && multiNUMA:
		r.bad("rank %d: no memory policy (%q %v), GPU %d's NUMA Affinity %d on a node of several NUMA nodes", id, rk.MemPolicy, rk.MemNodes, gi, tg.NUMAAffinity)
	}
}

// checkHCAs: the rank's HCAs (NCCL_IB_HCA's devices, maybe with :port and
// NCCL's leading = or ^) are among the NICs topo -m puts nearest its GPU.
// No HCA is a mismatch when a NIC is nearer than SYS.
func checkHCAs(r *report, id, gi int, tg topom.GPU, nics []string, hcas []string) {
	if len(nics) == 0 {
		return
	}
	best, nearest := nearestNICs(tg, nics)
	if len(hcas) == 0 {
		if best < topom.SYS {
			r.bad("rank %d: no HCA, topo -m puts %s at %s from GPU %d", id, strings.Join(nearest, ","), best, gi)
		}
		return
	}
	for _, h := range hcas {
		name := strings.TrimLeft(h, "=^")
		name, _, _ = strings.Cut(name, ":")
		j := slices.Index(nics, name)
		switch {
		case j < 0:
			r.bad("rank %d: HCA %s is not a NIC of topo -m (%s)", id, h, strings.Join(nics, ","))
		case tg.NICs[j] != best:
			r.bad("rank %d: HCA %s is %s from GPU %d, topo -m's nearest (%s): %s", id, h, tg.NICs[j], gi, best, strings.Join(nearest, ","))
		}
	}
}

// checkWholeCores: the rank's CPUs are whole cores (all SMT siblings or
// none), per gres.json's node.cores.
func checkWholeCores(r *report, id int, set cpuset.Set, g *gresFile) {
	var split []string
	for _, c := range g.Node.Cores {
		in := set.Intersection(c.CPUs)
		if !in.IsEmpty() && !in.Equal(c.CPUs) {
			split = append(split, fmt.Sprintf("core %d (CPUs %s, rank has %s)", c.ID, c.CPUs, in))
		}
	}
	if len(split) > 0 {
		if len(split) > 3 {
			split = append(split[:3], fmt.Sprintf("and %d more", len(split)-3))
		}
		r.bad("rank %d: CPUs %s split cores: %s", id, set, strings.Join(split, ", "))
	}
}

// numaCount is the number of distinct NUMA Affinity values of the GPUs.
func numaCount(m *topom.Matrix) int {
	seen := map[int]bool{}
	for _, g := range m.GPUs {
		if g.NUMAAffinity >= 0 {
			seen[g.NUMAAffinity] = true
		}
	}
	return len(seen)
}

// nearestNICs is the PCIe level of the NICs topo -m puts nearest GPU tg
// and their names (from nics, topo -m's NIC names by column).
func nearestNICs(tg topom.GPU, nics []string) (topom.Path, []string) {
	best := topom.SYS
	for _, p := range tg.NICs {
		best = min(best, p)
	}
	var names []string
	for j, p := range tg.NICs {
		if p == best {
			names = append(names, nics[j])
		}
	}
	return best, names
}
