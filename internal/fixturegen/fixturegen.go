// Package fixturegen writes simulated GPU node roots: directory trees that
// look like a node's /sys and /proc, generated from a nodeshape.Shape, so
// every reader in gpuprep (and hwloc, HWLOC_FSROOT=<dir>) runs on them with
// --root DIR.
//
// What a root holds:
//   - CPUs: /sys/devices/system/cpu (online/possible/present, per-CPU
//     topology with masks and lists, caches, cpufreq policies and cpuidle
//     states unless the shape has none), /sys/bus/cpu, /proc/cpuinfo. CPU
//     numbering, NUMA membership, core ids, compute units, clusters, offline
//     CPUs and kernel age follow the shape (see nodeshape.Shape).
//   - NUMA: /sys/devices/system/node (cpumap, cpulist, distance, meminfo,
//     hugepages), /sys/bus/node, /proc/meminfo.
//   - PCI: a realistic hierarchy (root ports, PCIe switches) under
//     /sys/devices/pci<domain>:<bus>, /sys/bus/pci/devices and drivers
//     links, attributes (vendor, device, class, numa_node, local_cpus, ...)
//     and config space.
//   - NICs: /sys/class/net, /sys/class/infiniband, /sys/class/infiniband_verbs.
//   - NVIDIA driver: /proc/driver/nvidia (version, params, gpus/<bus>/
//     information), /proc/driver/nvidia-caps (mig-minors) and the MIG
//     capability files of existing instances.
//   - DMI, kernel knobs (THP, vm sysctls, numa_balancing), a cgroup v2 top.
//   - slurmd: its process in /proc (root, /usr/sbin/slurmd, in
//     system.slice/slurmd.service) and /run/slurmd.pid.
//
// Every symlink is relative, as the kernel's are, so a root can be moved and
// archived.
package fixturegen

import (
	"fmt"
	"os"
	"path/filepath"

	"gpuprep/internal/nodeshape"
)

// build renders a shape into an in-memory tree.
func build(s nodeshape.Shape) (*tree, error) {
	l, err := newLayout(s)
	if err != nil {
		return nil, err
	}
	pt, err := buildPCI(l)
	if err != nil {
		return nil, err
	}
	t := newTree()
	writeCPUs(t, l)
	writeCPUInfo(t, l)
	writeNUMA(t, l)
	writePCI(t, l, pt)
	writeNet(t, l, pt)
	writeNVIDIA(t, l)
	writeSystem(t, l)
	writeSlurmd(t, l)
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// Write writes the root of shape s into dir, creating it if needed. Files
// already there are replaced.
func Write(s nodeshape.Shape, dir string) error {
	t, err := build(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range t.paths() {
		e := t.entries[p]
		dst := filepath.Join(dir, filepath.FromSlash(p))
		switch e.kind {
		case kindDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case kindFile:
			if err := os.WriteFile(dst, e.data, 0o644); err != nil {
				return err
			}
		case kindLink:
			if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
				return err
			}
			if err := os.Symlink(e.target, dst); err != nil {
				return err
			}
		default:
			return fmt.Errorf("fixturegen: %s: unknown entry kind", p)
		}
	}
	return nil
}
