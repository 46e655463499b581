package topo

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// splitComputeUnits applies hwloc's compute-unit rule, which Slurm's core
// count follows: on AMD family 21 and 22 (Bulldozer, Jaguar) the cores of a
// compute unit share core_cpus/thread_siblings but each keeps its own
// core_id, and every such CPU is a core of one thread. As hwloc does, it
// compares the core_id of the first two CPUs of the first multi-CPU core
// and only when they differ reads the vendor and family in /proc/cpuinfo.
func splitComputeUnits(r host.Root, cores []cpuset.Set) ([]cpuset.Set, error) {
	var first []int
	for _, c := range cores {
		if c.Size() > 1 {
			first = c.List()[:2]
			break
		}
	}
	if first == nil {
		return cores, nil
	}
	var ids [2]int
	for i, cpu := range first {
		v, err := r.ReadInt(topoFile(cpu, "core_id"))
		if isNotExist(err) {
			return cores, nil
		}
		if err != nil {
			return nil, err
		}
		ids[i] = v
	}
	if ids[0] == ids[1] {
		return cores, nil
	}
	b, err := r.ReadFile("/proc/cpuinfo")
	if err != nil && !isNotExist(err) {
		return nil, err
	}
	if !hasComputeUnits(b) {
		return cores, nil
	}
	var out []cpuset.Set
	for _, c := range cores {
		for _, cpu := range c.List() {
			out = append(out, cpuset.New(cpu))
		}
	}
	return out, nil
}

// hasComputeUnits reads the first processor of /proc/cpuinfo: AuthenticAMD
// with cpu family 21 or 22.
func hasComputeUnits(cpuinfo []byte) bool {
	var vendor string
	family := -1
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && vendor != "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "vendor_id":
			vendor = strings.TrimSpace(v)
		case "cpu family":
			family, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return vendor == "AuthenticAMD" && (family == 21 || family == 22)
}
