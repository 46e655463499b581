package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// pciDevicePath is the sysfs folder of a PCI device.
func pciDevicePath(busID string) string { return "/sys/bus/pci/devices/" + busID }

// pciNUMANode reads /sys/bus/pci/devices/<bus>/numa_node; -1 when the file
// is absent or unreadable (the kernel also writes -1 when it does not know).
func pciNUMANode(root host.Root, busID string) int {
	v, err := root.ReadInt(pciDevicePath(busID) + "/numa_node")
	if err != nil || v < -1 {
		return -1
	}
	return v
}

// pciLocalCPUs reads /sys/bus/pci/devices/<bus>/local_cpulist; the empty set
// when absent.
func pciLocalCPUs(root host.Root, busID string) (cpuset.Set, error) {
	s, err := root.ReadString(pciDevicePath(busID) + "/local_cpulist")
	if err != nil {
		return cpuset.Set{}, nil
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("%s/local_cpulist: %w", pciDevicePath(busID), err)
	}
	return set, nil
}

// possibleCPUs is the number of CPU ids the kernel may use: the highest id in
// /sys/devices/system/cpu/possible plus one; 0 when unreadable.
func possibleCPUs(root host.Root) int {
	s, err := root.ReadString("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return 0
	}
	return set.Max() + 1
}

// gpuMemoryNUMANodes reads /proc/driver/nvidia/gpus/<bus>/numa_status, which
// the driver writes on coherent platforms (Grace Hopper) where the GPU's
// memory is onlined as a CPU-less NUMA node: its "Node: N" line. Nil
// elsewhere.
func gpuMemoryNUMANodes(root host.Root, busID string) []int {
	b, err := root.ReadFile("/proc/driver/nvidia/gpus/" + busID + "/numa_status")
	if err != nil {
		return nil
	}
	var nodes []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "Node" {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// cpusFromWords turns NVML's CPU affinity bitmask (unsigned long words, CPU
// w*64+b at bit b of word w) into a Set.
func cpusFromWords(words []uint) cpuset.Set {
	var ids []int
	for w, word := range words {
		for b := 0; b < 64; b++ {
			if uint64(word)&(1<<uint(b)) != 0 {
				ids = append(ids, w*64+b)
			}
		}
	}
	return cpuset.New(ids...)
}

// wordsFromCPUs is the inverse of cpusFromWords, truncated to n words as
// NVML fills a caller's array of n words.
func wordsFromCPUs(s cpuset.Set, n int) []uint {
	out := make([]uint, n)
	for _, c := range s.List() {
		if c/64 < n {
			out[c/64] |= 1 << uint(c%64)
		}
	}
	return out
}
