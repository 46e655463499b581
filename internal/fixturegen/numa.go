package fixturegen

import (
	"fmt"
	"strings"
)

const sysNode = "sys/devices/system/node"

// hugepageSizes are the huge page sizes (kB) the kernel offers.
func (l *layout) hugepageSizes() []int {
	if l.isArm() { // arm64 with 4K pages: contiguous-PTE and block sizes
		return []int{64, 2048, 32768, 1048576}
	}
	return []int{2048, 1048576}
}

// writeNUMA writes /sys/devices/system/node, /sys/bus/node and the memory
// files that follow from it (/proc/meminfo, /sys/kernel/mm/hugepages).
func writeNUMA(t *tree, l *layout) {
	var ids, withCPU, withMem []int
	for _, n := range l.Nodes {
		ids = append(ids, n.ID)
		if len(n.CPUs) > 0 {
			withCPU = append(withCPU, n.ID)
		}
		if n.MemMiB > 0 {
			withMem = append(withMem, n.ID)
		}
	}
	l.list(t, sysNode+"/online", ids)
	l.list(t, sysNode+"/possible", ids)
	l.list(t, sysNode+"/has_cpu", withCPU)
	l.list(t, sysNode+"/has_memory", withMem)
	l.list(t, sysNode+"/has_normal_memory", withMem)
	for _, n := range l.Nodes {
		dir := fmt.Sprintf("%s/node%d", sysNode, n.ID)
		t.link(fmt.Sprintf("sys/bus/node/devices/node%d", n.ID), dir)
		t.line(dir+"/cpumap", cpuMask(n.CPUs, l.nCPU()))
		l.list(t, dir+"/cpulist", n.CPUs)
		var d []string
		for _, o := range l.Nodes {
			d = append(d, fmt.Sprint(l.distance(n.ID, o.ID)))
		}
		t.line(dir+"/distance", strings.Join(d, " "))
		t.file(dir+"/meminfo", nodeMeminfo(n.ID, n.MemMiB))
		t.file(dir+"/numastat", "numa_hit 0\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\nlocal_node 0\nother_node 0\n")
		for _, c := range n.CPUs {
			t.link(fmt.Sprintf("%s/cpu%d", dir, c), fmt.Sprintf("%s/cpu%d", sysCPU, c))
		}
		for _, kb := range l.hugepageSizes() {
			hp := fmt.Sprintf("%s/hugepages/hugepages-%dkB", dir, kb)
			t.line(hp+"/nr_hugepages", "0")
			t.line(hp+"/free_hugepages", "0")
			t.line(hp+"/surplus_hugepages", "0")
		}
	}
	for _, kb := range l.hugepageSizes() {
		hp := fmt.Sprintf("sys/kernel/mm/hugepages/hugepages-%dkB", kb)
		for _, f := range []string{"nr_hugepages", "nr_hugepages_mempolicy", "nr_overcommit_hugepages",
			"free_hugepages", "resv_hugepages", "surplus_hugepages"} {
			t.line(hp+"/"+f, "0")
		}
	}
	total := 0
	for _, n := range l.Nodes {
		total += n.MemMiB
	}
	t.file("proc/meminfo", procMeminfo(total*1024))
}

// nodeMeminfo is /sys/devices/system/node/nodeN/meminfo for a node of mib
// MiB, mostly free.
func nodeMeminfo(id, mib int) string {
	total := mib * 1024
	used := 0
	if total > 0 {
		used = total / 50
	}
	rows := []struct {
		k string
		v int
	}{
		{"MemTotal", total}, {"MemFree", total - used}, {"MemUsed", used},
		{"SwapCached", 0}, {"Active", used / 4}, {"Inactive", used / 2},
		{"Active(anon)", used / 16}, {"Inactive(anon)", used / 32},
		{"Active(file)", used / 4 * 3 / 4}, {"Inactive(file)", used / 2 * 15 / 16},
		{"Unevictable", 0}, {"Mlocked", 0}, {"Dirty", 0}, {"Writeback", 0},
		{"FilePages", used / 2}, {"Mapped", used / 64}, {"AnonPages", used / 16},
		{"Shmem", used / 128}, {"KernelStack", used / 256}, {"PageTables", used / 256},
		{"SecPageTables", 0}, {"NFS_Unstable", 0}, {"Bounce", 0}, {"WritebackTmp", 0},
		{"KReclaimable", used / 32}, {"Slab", used / 16}, {"SReclaimable", used / 32},
		{"SUnreclaim", used / 32}, {"AnonHugePages", 0}, {"ShmemHugePages", 0},
		{"ShmemPmdMapped", 0}, {"FileHugePages", 0}, {"FilePmdMapped", 0},
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "Node %d %-15s %10d kB\n", id, r.k+":", r.v)
	}
	for _, k := range []string{"HugePages_Total:", "HugePages_Free:", "HugePages_Surp:"} {
		fmt.Fprintf(&b, "Node %d %-15s %5d\n", id, k, 0)
	}
	return b.String()
}

// procMeminfo is /proc/meminfo for totalKB of memory, mostly free.
func procMeminfo(totalKB int) string {
	used := totalKB / 50
	rows := []struct {
		k string
		v int
	}{
		{"MemTotal", totalKB}, {"MemFree", totalKB - used}, {"MemAvailable", totalKB - used/2},
		{"Buffers", used / 64}, {"Cached", used / 2}, {"SwapCached", 0},
		{"Active", used / 4}, {"Inactive", used / 2}, {"Active(anon)", used / 16},
		{"Inactive(anon)", used / 32}, {"Active(file)", used / 4 * 3 / 4},
		{"Inactive(file)", used / 2 * 15 / 16}, {"Unevictable", 0}, {"Mlocked", 0},
		{"SwapTotal", 0}, {"SwapFree", 0}, {"Zswap", 0}, {"Zswapped", 0},
		{"Dirty", 0}, {"Writeback", 0}, {"AnonPages", used / 16}, {"Mapped", used / 64},
		{"Shmem", used / 128}, {"KReclaimable", used / 32}, {"Slab", used / 16},
		{"SReclaimable", used / 32}, {"SUnreclaim", used / 32}, {"KernelStack", used / 256},
		{"PageTables", used / 256}, {"SecPageTables", 0}, {"NFS_Unstable", 0},
		{"Bounce", 0}, {"WritebackTmp", 0}, {"CommitLimit", totalKB / 2},
		{"Committed_AS", used / 8}, {"VmallocTotal", 34359738367}, {"VmallocUsed", 262144},
		{"VmallocChunk", 0}, {"Percpu", 262144}, {"HardwareCorrupted", 0},
		{"AnonHugePages", 0}, {"ShmemHugePages", 0}, {"ShmemPmdMapped", 0},
		{"FileHugePages", 0}, {"FilePmdMapped", 0}, {"Unaccepted", 0},
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-15s %8d kB\n", r.k+":", r.v)
	}
	for _, k := range []string{"HugePages_Total:", "HugePages_Free:", "HugePages_Rsvd:", "HugePages_Surp:"} {
		fmt.Fprintf(&b, "%-15s %8d\n", k, 0)
	}
	b.WriteString("Hugepagesize:       2048 kB\nHugetlb:               0 kB\n")
	fmt.Fprintf(&b, "%-15s %8d kB\n%-15s %8d kB\n%-15s %8d kB\n", "DirectMap4k:", 1048576,
		"DirectMap2M:", totalKB/4, "DirectMap1G:", totalKB-totalKB/4-1048576)
	return b.String()
}
