package gresgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/isolate"
	"gpuprep/lib/topo"
)

// cpuSpecList turns the housekeeping CPUs a profile names (isolate.Spec)
// into slurm.conf's CpuSpecList: Slurm abstract CPU ids, which number the
// hardware threads core by core in Slurm's core order (core c's threads
// are c*ThreadsPerCore .. c*ThreadsPerCore+ThreadsPerCore-1, by ascending
// OS id). Slurm widens the list to whole cores anyway; the housekeeping
// set is made of whole cores unless the admin listed single threads, so
// this widens it the same way, to say what Slurm will reserve.
func cpuSpecList(node *topo.Node, spec isolate.Spec) (cpuset.Set, error) {
	hk, err := isolate.Housekeeping(spec, node)
	if err != nil {
		return cpuset.Set{}, err
	}
	tpc := node.ThreadsPerCore()
	if tpc < 1 {
		tpc = 1
	}
	out := cpuset.New()
	for _, c := range node.Cores {
		if c.CPUs.Intersection(hk).IsEmpty() {
			continue
		}
		if c.CPUs.Size() != tpc {
			return cpuset.Set{}, fmt.Errorf("core %d has %d threads, the node %d: Slurm's abstract CPU ids are ambiguous", c.ID, c.CPUs.Size(), tpc)
		}
		for i := range c.CPUs.List() {
			out = out.Union(cpuset.New(c.ID*tpc + i))
		}
	}
	return out, nil
}

// formatSpecList writes ids as slurm.conf's comma-delimited list.
func formatSpecList(s cpuset.Set) string {
	ids := s.List()
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// osCPUsOfSpec is the OS CPUs behind abstract ids, for messages.
func osCPUsOfSpec(node *topo.Node, ids cpuset.Set) cpuset.Set {
	tpc := max(node.ThreadsPerCore(), 1)
	out := cpuset.New()
	for _, c := range node.Cores {
		for i, cpu := range c.CPUs.List() {
			if slices.Contains(ids.List(), c.ID*tpc+i) {
				out = out.Union(cpuset.New(cpu))
			}
		}
	}
	return out
}
