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
	Die      int `json:"die"`       // die_id (0 where the kernel has none)
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

// readCPUs reads the online CPUs and their topology. It reads the kernel's
// group lists once per group rather than one file per CPU: for the first CPU
// of each socket cpu<N>/topology/physical_package_id and package_cpus_list,
// of each die die_id and die_cpus_list, and of each core core_cpus_list
// (older kernels: core_siblings_list, thread_siblings_list). On a 224-CPU
// node that is ~120 small files instead of ~670. A CPU without topology files
// (some hypervisors) is its own core on socket 0.
func readCPUs(r host.Root) ([]CPU, error) {
	const base = "/sys/devices/system/cpu"
	online, err := OnlineCPUs(r)
	if err != nil {
		return nil, err
	}
	ids := online.List()
	cpus := make([]CPU, len(ids))
	index := make(map[int]int, len(ids))
	for i, id := range ids {
		cpus[i] = CPU{ID: id, NUMANode: -1, Socket: -1, Die: -1, CoreID: -1}
		index[id] = i
	}
	// assign runs read for the first CPU without a value and copies the
	// value to every online CPU of the group the kernel lists.
	assign := func(get func(*CPU) *int, idFile string, listFiles ...string) error {
		for i := range cpus {
			if *get(&cpus[i]) >= 0 {
				continue
			}
			dir := path.Join(base, fmt.Sprintf("cpu%d", cpus[i].ID), "topology")
			v, group, err := readGroup(r, dir, cpus[i].ID, idFile, listFiles)
			if err != nil {
				return err
			}
			for _, id := range group.Intersection(online).List() {
				if j, ok := index[id]; ok && *get(&cpus[j]) < 0 {
					*get(&cpus[j]) = v
				}
			}
		}
		return nil
	}
	if err := assign(func(c *CPU) *int { return &c.Socket }, "physical_package_id", "package_cpus_list", "core_siblings_list"); err != nil {
		return nil, err
	}
	if err := assign(func(c *CPU) *int { return &c.Die }, "die_id", "die_cpus_list"); err != nil {
		return nil, err
	}
	if err := assign(func(c *CPU) *int { return &c.CoreID }, "", "core_cpus_list", "thread_siblings_list"); err != nil {
		return nil, err
	}
	return cpus, nil
}

// readGroup reads one CPU's id for a topology level (idFile; "" names the
// group by its first CPU) and the CPUs sharing it (the first of listFiles
// that exists). Missing files give the CPU alone: id 0 when the id file is
// absent, the CPU's own id for an unnamed group.
func readGroup(r host.Root, dir string, cpu int, idFile string, listFiles []string) (int, cpuset.Set, error) {
	group := cpuset.New(cpu)
	for _, name := range listFiles {
		s, err := r.ReadString(dir + "/" + name)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return 0, group, err
		}
		g, err := cpuset.Parse(s)
		if err != nil {
			return 0, group, fmt.Errorf("%s/%s: %w", dir, name, err)
		}
		if !g.Contains(cpu) {
			return 0, group, fmt.Errorf("%s/%s: %s does not hold cpu%d", dir, name, g, cpu)
		}
		group = g
		break
	}
	if idFile == "" {
		return group.Min(), group, nil
	}
	v, err := r.ReadInt(dir + "/" + idFile)
	if isNotExist(err) {
		return 0, group, nil
	}
	if err != nil {
		return 0, group, err
	}
	return max(v, 0), group, nil // -1 on some ARM firmware
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
