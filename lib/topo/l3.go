package topo

import (
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// readL3 reads the level-3 caches: for the first online CPU not yet in one,
// the shared_cpu_list of its cpu<N>/cache/index<K> whose level is 3. Slurm
// keeps L3 caches in its hwloc tree (it drops L1 and L2), so they order
// cores. index3 is tried first, where x86 and Arm servers put L3; otherwise
// every index<K>/level is read. A CPU without one is in no L3 group.
func readL3(r host.Root, online cpuset.Set) ([]cpuset.Set, error) {
	var out []cpuset.Set
	done := cpuset.New()
	for _, cpu := range online.List() {
		if done.Contains(cpu) {
			continue
		}
		set, ok, err := readL3Of(r, cpu)
		if err != nil {
			return nil, err
		}
		if !ok {
			done = done.Union(cpuset.New(cpu))
			continue
		}
		set = set.Intersection(online).Difference(done).Union(cpuset.New(cpu))
		done = done.Union(set)
		out = append(out, set)
	}
	return out, nil
}

// readL3Of reads the CPUs sharing cpu's level-3 cache.
func readL3Of(r host.Root, cpu int) (cpuset.Set, bool, error) {
	dir := cpuBase + "/cpu" + strconv.Itoa(cpu) + "/cache"
	index := ""
	if lvl, err := r.ReadInt(dir + "/index3/level"); err == nil && lvl == 3 {
		index = dir + "/index3"
	} else if err != nil && !isNotExist(err) {
		return cpuset.Set{}, false, err
	} else {
		names, err := r.ReadDir(dir)
		if isNotExist(err) {
			return cpuset.Set{}, false, nil
		}
		if err != nil {
			return cpuset.Set{}, false, err
		}
		for _, name := range names {
			if !strings.HasPrefix(name, "index") {
				continue
			}
			lvl, err := r.ReadInt(dir + "/" + name + "/level")
			if err == nil && lvl == 3 {
				index = dir + "/" + name
				break
			}
			if err != nil && !isNotExist(err) {
				return cpuset.Set{}, false, err
			}
		}
	}
	if index == "" {
		return cpuset.Set{}, false, nil
	}
	p := index + "/shared_cpu_list"
	s, err := r.ReadString(p)
	if isNotExist(err) {
		return cpuset.Set{}, false, nil
	}
	if err != nil {
		return cpuset.Set{}, false, err
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.Set{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return set, true, nil
}
