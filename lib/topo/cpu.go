package topo

import (
	"fmt"
	"strconv"
	"sync"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// CPU is one logical CPU (a hardware thread, hwloc's PU).
type CPU struct {
	ID       int `json:"id"`        // OS CPU id, as in /sys/devices/system/cpu/cpu<ID>
	Socket   int `json:"socket"`    // Socket.ID of its package
	Die      int `json:"die"`       // die_id (0 where the kernel has none)
	CoreID   int `json:"core_id"`   // names the core within its socket: its first hardware thread
	Core     int `json:"core"`      // Slurm's abstract core id
	NUMANode int `json:"numa_node"` // -1 when the kernel reports no NUMA node for it
}

// Core is one physical core with its hardware threads.
type Core struct {
	ID     int        `json:"id"`     // Slurm's abstract core id (gres.conf Cores=)
	Socket int        `json:"socket"` // Socket.ID of its package
	CPUs   cpuset.Set `json:"cpus"`   // its hardware threads (OS CPU ids)
}

// Socket is one CPU package.
type Socket struct {
	// ID is the package's physical_package_id; where the kernel gives -1
	// (s390x, some POWER and Arm firmware) or no id, the package's index
	// in Slurm's order.
	ID    int        `json:"id"`
	CPUs  cpuset.Set `json:"cpus"`
	Cores []int      `json:"cores"` // Slurm core ids, ascending
}

// cpuSets is how the kernel groups the online CPUs: the sets hwloc's Linux
// backend builds its tree from, and so the sets Slurm's core numbering
// follows. Every set holds online CPUs only.
type cpuSets struct {
	online   cpuset.Set
	packages []idSet      // package_cpus (older kernels: core_siblings), with physical_package_id
	dies     []idSet      // die_cpus with die_id; dies of one CPU are left out, as hwloc does
	clusters []cpuset.Set // cluster_cpus, of more than one CPU
	l3       []cpuset.Set // each level-3 cache's shared_cpu_list
	cores    []cpuset.Set // core_cpus (older kernels: thread_siblings)
}

// idSet is a group of CPUs and the kernel's id for it (-1: none given).
type idSet struct {
	id   int
	cpus cpuset.Set
}

const cpuBase = "/sys/devices/system/cpu"

// topoFile is the path of a file of cpu<N>/topology.
func topoFile(cpu int, name string) string {
	return cpuBase + "/cpu" + strconv.Itoa(cpu) + "/topology/" + name
}

// readCPUSets reads the kernel's CPU groups under
// /sys/devices/system/cpu/cpu<N>: topology/{package_cpus_list,
// physical_package_id, die_cpus_list, die_id, cluster_cpus_list,
// core_cpus_list} (older kernels: core_siblings_list and
// thread_siblings_list) and the level-3 cache of cache/index<K>. Each
// group's list is read once, from its first CPU: on a 224-CPU node about 350
// small files. A CPU without a file is in no group of that kind (a
// hypervisor without topology files gives one socket of one-CPU cores).
func readCPUSets(r host.Root) (cpuSets, error) {
	var s cpuSets
	var err error
	if s.online, err = OnlineCPUs(r); err != nil {
		return s, err
	}
	// Each kind of group is read in its own goroutine: the reads are
	// independent, and cores and clusters take one file per core.
	var wg sync.WaitGroup
	errs := make([]error, 5)
	read := func(i int, f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	read(0, func() (err error) {
		s.packages, err = readIDGroups(r, s.online, "physical_package_id", "package_cpus_list", "core_siblings_list")
		return err
	})
	read(1, func() (err error) {
		s.dies, err = readIDGroups(r, s.online, "die_id", "die_cpus_list")
		s.dies = multiCPU(s.dies)
		return err
	})
	read(2, func() (err error) {
		s.clusters, err = readGroups(r, s.online, "cluster_cpus_list")
		return err
	})
	read(3, func() (err error) {
		if s.cores, err = readGroups(r, s.online, "core_cpus_list", "thread_siblings_list"); err != nil {
			return err
		}
		s.cores, err = splitComputeUnits(r, s.cores)
		return err
	})
	read(4, func() (err error) {
		s.l3, err = readL3(r, s.online)
		return err
	})
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// readGroups partitions the online CPUs by a topology list file: for the
// first CPU not yet in a group it reads the first of names that exists and
// takes the online CPUs listed. CPUs without any of the files are in no
// group. A list that does not hold its own CPU is garbage and an error.
func readGroups(r host.Root, online cpuset.Set, names ...string) ([]cpuset.Set, error) {
	groups, err := readIDGroups(r, online, "", names...)
	out := make([]cpuset.Set, len(groups))
	for i, g := range groups {
		out[i] = g.cpus
	}
	return out, err
}

// readIDGroups is readGroups that also reads each group's id from idFile of
// its first CPU (-1 when idFile is "" or absent).
func readIDGroups(r host.Root, online cpuset.Set, idFile string, names ...string) ([]idSet, error) {
	var groups []idSet
	done := cpuset.New()
	for _, cpu := range online.List() {
		if done.Contains(cpu) {
			continue
		}
		set, ok, err := readList(r, cpu, names)
		if err != nil {
			return nil, err
		}
		if !ok {
			done = done.Union(cpuset.New(cpu))
			continue
		}
		set = set.Intersection(online).Difference(done)
		done = done.Union(set)
		g := idSet{id: -1, cpus: set}
		if idFile != "" {
			v, err := r.ReadInt(topoFile(cpu, idFile))
			if err != nil && !isNotExist(err) {
				return nil, err
			}
			if err == nil && v >= 0 {
				g.id = v
			}
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// readList reads the first of a CPU's topology list files that exists.
func readList(r host.Root, cpu int, names []string) (cpuset.Set, bool, error) {
	for _, name := range names {
		p := topoFile(cpu, name)
		s, err := r.ReadString(p)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return cpuset.Set{}, false, err
		}
		set, err := cpuset.Parse(s)
		if err != nil {
			return cpuset.Set{}, false, fmt.Errorf("%s: %w", p, err)
		}
		if !set.Contains(cpu) {
			return cpuset.Set{}, false, fmt.Errorf("%s: %s does not hold cpu%d", p, set, cpu)
		}
		return set, true, nil
	}
	return cpuset.Set{}, false, nil
}

// multiCPU drops the groups of one CPU (hwloc ignores such dies, the
// default values of architectures without dies).
func multiCPU(groups []idSet) []idSet {
	var out []idSet
	for _, g := range groups {
		if g.cpus.Size() > 1 {
			out = append(out, g)
		}
	}
	return out
}
