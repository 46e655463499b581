package topo

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"gpuprep/lib/host"
)

// readGPUMemoryNUMA reads /proc/driver/nvidia/gpus/<bus>/numa_status, which
// the driver writes on coherent platforms (Grace Hopper) where the GPU's
// memory is onlined as a CPU-less NUMA node: the nodes of its "Node: N"
// lines. Nil when the file is absent (every other platform).
func readGPUMemoryNUMA(r host.Root, busID string) ([]int, error) {
	file := "/proc/driver/nvidia/gpus/" + busID + "/numa_status"
	b, err := r.ReadFile(file)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseNUMAStatus(file, b)
}

// parseNUMAStatus parses a numa_status file: "Node: N" lines, N >= 0. Other
// lines (memory block states) are ignored.
func parseNUMAStatus(file string, b []byte) ([]int, error) {
	var nodes []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "Node" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil, errorf("%s: Node %q is not a NUMA node id", file, strings.TrimSpace(v))
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
