package topo

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// NUMANode is one NUMA node. CPU-less nodes (Grace Hopper GPU memory, CXL)
// have an empty CPUs set.
type NUMANode struct {
	ID        int        `json:"id"`
	CPUs      cpuset.Set `json:"cpus"`
	MemoryMiB uint64     `json:"memory_mib"`
	// Distances[i] is the SLIT distance to the i-th node of Node.NUMA.
	Distances []int `json:"distances"`
}

// readNUMA reads /sys/devices/system/node/node<N>/{cpulist,distance,meminfo}.
// A kernel without NUMA support (no node directories) gives one node 0 holding
// every online CPU.
func readNUMA(r host.Root, online cpuset.Set) ([]NUMANode, error) {
	const base = "/sys/devices/system/node"
	dirs, err := r.Glob(base + "/node[0-9]*")
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return []NUMANode{{ID: 0, CPUs: online, Distances: []int{10}}}, nil
	}
	var nodes []NUMANode
	for _, d := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(path.Base(d), "node"))
		if err != nil {
			continue
		}
		n := NUMANode{ID: id}
		s, err := r.ReadString(d + "/cpulist")
		if err != nil {
			return nil, err
		}
		if n.CPUs, err = cpuset.Parse(s); err != nil {
			return nil, fmt.Errorf("%s/cpulist: %w", d, err)
		}
		n.CPUs = n.CPUs.Intersection(online)
		if s, err := r.ReadString(d + "/distance"); err == nil {
			if n.Distances, err = parseDistances(s); err != nil {
				return nil, fmt.Errorf("%s/distance: %w", d, err)
			}
		}
		if b, err := r.ReadFile(d + "/meminfo"); err == nil {
			n.MemoryMiB = parseNodeMemTotal(b) / 1024
		}
		nodes = append(nodes, n)
	}
	sortNodes(nodes)
	return nodes, nil
}

func sortNodes(nodes []NUMANode) {
	for i := 1; i < len(nodes); i++ {
		for j := i; j > 0 && nodes[j].ID < nodes[j-1].ID; j-- {
			nodes[j], nodes[j-1] = nodes[j-1], nodes[j]
		}
	}
}

// parseDistances reads a node's distance file: one SLIT distance per node.
func parseDistances(s string) ([]int, error) {
	f := strings.Fields(s)
	out := make([]int, len(f))
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("bad distance %q", x)
		}
		out[i] = v
	}
	return out, nil
}

// parseNodeMemTotal finds "Node 0 MemTotal:  263725020 kB" in a node's
// meminfo and returns KiB (0 if absent).
func parseNodeMemTotal(b []byte) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[2] == "MemTotal:" {
			v, _ := strconv.ParseUint(f[3], 10, 64)
			return v
		}
	}
	return 0
}

// parseMemTotal finds "MemTotal:  263725020 kB" in /proc/meminfo (KiB).
func parseMemTotal(b []byte) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			v, err := strconv.ParseUint(f[1], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
