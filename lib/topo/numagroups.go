package topo

import (
	"math"

	"gpuprep/lib/cpuset"
)

// distanceGroups are the CPU sets of the groups hwloc builds from the NUMA
// distance matrix (the SLIT, /sys/devices/system/node/node<N>/distance):
// NUMA nodes joined, transitively, by the smallest distance between two
// distinct nodes form a group; the groups' mean distances are grouped again,
// level by level, as hwloc 2's Linux backend does (distances.c,
// hwloc__groups_by_distances, exact values). Slurm keeps these groups in its
// tree, so they order cores: on a 4-socket node whose SLIT pairs socket 0
// with socket 2, Slurm numbers socket 2's cores before socket 1's.
//
// fits says whether a group's CPUs nest with the tree's other objects;
// hwloc drops a group that would cut one and stops grouping above it. A
// matrix that is not symmetric, or whose diagonal is not strictly the
// smallest of its row, gives no groups. Pure: no I/O.
func distanceGroups(nodes []NUMANode, fits func(cpuset.Set) bool) []cpuset.Set {
	n := len(nodes)
	if n < 2 {
		return nil
	}
	values := make([]uint64, n*n)
	for i, nd := range nodes {
		if len(nd.Distances) != n {
			return nil
		}
		for j, d := range nd.Distances {
			values[i*n+j] = uint64(d)
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if values[i*n+j] != values[j*n+i] || values[i*n+j] <= values[i*n+i] {
				return nil
			}
		}
	}
	sets := make([]cpuset.Set, n)
	for i, nd := range nodes {
		sets[i] = nd.CPUs
	}
	var out []cpuset.Set
	for {
		ids, count := groupByMinDistance(len(sets), values)
		if count == 0 {
			return out
		}
		groups := make([]cpuset.Set, count)
		sizes := make([]uint64, count)
		for i := range groups {
			groups[i] = cpuset.New()
		}
		for i, id := range ids {
			if id > 0 {
				groups[id-1] = groups[id-1].Union(sets[i])
				sizes[id-1]++
			}
		}
		failed := false
		for _, g := range groups {
			if fits(g) {
				out = append(out, g)
			} else {
				failed = true
			}
		}
		if failed {
			return out
		}
		// The groups' distances: the mean over their members.
		gv := make([]uint64, count*count)
		for i, a := range ids {
			for j, b := range ids {
				if a > 0 && b > 0 {
					gv[(a-1)*count+(b-1)] += values[i*len(sets)+j]
				}
			}
		}
		for a := 0; a < count; a++ {
			for b := 0; b < count; b++ {
				gv[a*count+b] /= sizes[a] * sizes[b]
			}
		}
		sets, values = groups, gv
	}
}

// groupByMinDistance numbers (from 1) the groups of objects joined,
// transitively, by the smallest distance between two distinct objects;
// objects joined to none keep 0. It returns no group when there are at
// most two objects, or when a single group would hold them all.
func groupByMinDistance(n int, values []uint64) ([]int, int) {
	if n <= 2 {
		return nil, 0
	}
	min := uint64(math.MaxUint64)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && values[i*n+j] < min {
				min = values[i*n+j]
			}
		}
	}
	ids := make([]int, n)
	next, skipped := 1, 0
	for i := 0; i < n; i++ {
		if ids[i] != 0 {
			continue
		}
		ids[i] = next
		size := 1
		for grew := true; grew; {
			grew = false
			for j := 0; j < n; j++ {
				if ids[j] != next {
					continue
				}
				for k := 0; k < n; k++ {
					if ids[k] == 0 && values[j*n+k] == min {
						ids[k] = next
						size++
						grew = true
					}
				}
			}
		}
		if size == 1 {
			ids[i] = 0
			skipped++
			continue
		}
		next++
	}
	if next == 2 && skipped == 0 {
		return nil, 0
	}
	return ids, next - 1
}
