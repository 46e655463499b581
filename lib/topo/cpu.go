package topo

import (
	"fmt"
	"path"
	"sort"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// CPU is one logical CPU (a hardware thread, hwloc's PU).
type CPU struct {
	ID       int `json:"id"`        // OS CPU id, as in /sys/devices/system/cpu/cpu<ID>
	Socket   int `json:"socket"`    // physical_package_id
	CoreID   int `json:"core_id"`   // names the core within its socket: its first hardware thread (or the kernel's core_id)
	Core     int `json:"core"`      // Slurm's abstract core id (hwloc Core L#)
	NUMANode int `json:"numa_node"` // -1 when the kernel reports no NUMA node for it
}

// Core is one physical core with its hardware threads.
type Core struct {
	ID     int        `json:"id"`     // Slurm's abstract core id: hwloc's Core L#
	Socket int        `json:"socket"` // physical_package_id
	CPUs   cpuset.Set `json:"cpus"`   // its hardware threads (OS CPU ids)
}

// Socket is one CPU package.
type Socket struct {
	ID    int        `json:"id"` // physical_package_id
	CPUs  cpuset.Set `json:"cpus"`
	Cores []int      `json:"cores"` // Slurm core ids, ascending
}

// readCPUs reads the online CPUs and their topology from
// /sys/devices/system/cpu/online and, once per core, cpu<N>/topology/
// physical_package_id and core_cpus_list (thread_siblings_list on kernels
// before 5.3, core_id as a last resort). Reading siblings once per core halves
// the files read on SMT nodes. A CPU without topology files (some
// hypervisors) is its own core on socket 0.
func readCPUs(r host.Root) ([]CPU, error) {
	const base = "/sys/devices/system/cpu"
	s, err := r.ReadString(base + "/online")
	if err != nil {
		return nil, fmt.Errorf("online CPUs: %w", err)
	}
	online, err := cpuset.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s/online: %w", base, err)
	}
	if online.IsEmpty() {
		return nil, fmt.Errorf("%s/online: no CPUs online", base)
	}
	ids := online.List()
	cpus := make([]CPU, 0, len(ids))
	known := map[int]CPU{} // siblings already placed, by CPU id
	for _, id := range ids {
		if c, ok := known[id]; ok {
			c.ID = id
			cpus = append(cpus, c)
			continue
		}
		c, siblings, err := readCPUTopology(r, path.Join(base, fmt.Sprintf("cpu%d", id), "topology"), id)
		if err != nil {
			return nil, err
		}
		for _, sib := range siblings.Intersection(online).List() {
			known[sib] = c
		}
		cpus = append(cpus, c)
	}
	return cpus, nil
}

// readCPUTopology reads one CPU's socket and core; the core is named by its
// first sibling, which is unique within the socket like the kernel's core_id.
func readCPUTopology(r host.Root, dir string, id int) (CPU, cpuset.Set, error) {
	c := CPU{ID: id, NUMANode: -1, CoreID: id}
	pkg, err := r.ReadInt(dir + "/physical_package_id")
	if isNotExist(err) {
		return c, cpuset.New(id), nil
	}
	if err != nil {
		return c, cpuset.Set{}, err
	}
	if pkg > 0 { // -1 on some ARM firmware
		c.Socket = pkg
	}
	for _, name := range []string{"core_cpus_list", "thread_siblings_list"} {
		s, err := r.ReadString(dir + "/" + name)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return c, cpuset.Set{}, err
		}
		sib, err := cpuset.Parse(s)
		if err != nil {
			return c, cpuset.Set{}, fmt.Errorf("%s/%s: %w", dir, name, err)
		}
		if !sib.Contains(id) {
			return c, cpuset.Set{}, fmt.Errorf("%s/%s: %s does not hold cpu%d", dir, name, sib, id)
		}
		c.CoreID = sib.Min()
		return c, sib, nil
	}
	core, err := r.ReadInt(dir + "/core_id")
	if err != nil {
		return c, cpuset.Set{}, err
	}
	c.CoreID = core
	return c, cpuset.New(id), nil
}

// buildCores groups CPUs into cores and sockets and numbers cores the way
// Slurm's gres.conf Cores= counts them: hwloc's logical core order, which
// sorts sockets by their first CPU and, within a socket, cores by their first
// CPU. It fills CPU.Core. Pure: no I/O.
func buildCores(cpus []CPU) ([]Core, []Socket) {
	type key struct{ socket, core int }
	members := map[key][]int{}
	socketFirst := map[int]int{}
	for _, c := range cpus {
		k := key{c.Socket, c.CoreID}
		members[k] = append(members[k], c.ID)
		if f, ok := socketFirst[c.Socket]; !ok || c.ID < f {
			socketFirst[c.Socket] = c.ID
		}
	}
	keys := make([]key, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.socket != b.socket {
			return socketFirst[a.socket] < socketFirst[b.socket]
		}
		return minInt(members[a]) < minInt(members[b])
	})
	cores := make([]Core, len(keys))
	coreOf := map[key]int{}
	var sockets []Socket
	socketIdx := map[int]int{}
	for i, k := range keys {
		cores[i] = Core{ID: i, Socket: k.socket, CPUs: cpuset.New(members[k]...)}
		coreOf[k] = i
		si, ok := socketIdx[k.socket]
		if !ok {
			si = len(sockets)
			socketIdx[k.socket] = si
			sockets = append(sockets, Socket{ID: k.socket})
		}
		sockets[si].Cores = append(sockets[si].Cores, i)
		sockets[si].CPUs = sockets[si].CPUs.Union(cores[i].CPUs)
	}
	for i := range cpus {
		cpus[i].Core = coreOf[key{cpus[i].Socket, cpus[i].CoreID}]
	}
	return cores, sockets
}

func minInt(v []int) int {
	m := v[0]
	for _, x := range v[1:] {
		if x < m {
			m = x
		}
	}
	return m
}
