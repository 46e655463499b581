package gresgen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/slurmcores"
	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// TestNodeLineAgainstSlurmd holds the node line's CPUs, Sockets,
// CoresPerSocket and ThreadsPerCore, as gpuprep-gres prints it by default
// (following the node's slurm.conf), against what Slurm's own slurmd counts
// on every fixture root (HWLOC_FSROOT): without SlurmdParameters against
// `slurmd -C`, and with SlurmdParameters=numa_node_as_socket or
// l3cache_as_socket in slurm.conf against what the daemon registers
// (`slurmd -D -G -vv`, which `slurmd -C` does not show). The roots include
// one derived from dgxh100 whose single NUMA node spans both sockets.
func TestNodeLineAgainstSlurmd(t *testing.T) {
	slurmcores.RequireSlurmd(t)
	slurmcores.RequireSlurmdRegistered(t)
	roots := map[string]func(*testing.T) string{}
	for _, name := range testroot.Names() {
		roots[name] = func(t *testing.T) string { return testroot.Shared(t, name) }
	}
	roots["dgxh100-one-numa-node"] = func(t *testing.T) string { return oneNUMANode(t, "dgxh100") }
	for name, rootOf := range roots {
		t.Run(name, func(t *testing.T) {
			dir := rootOf(t)
			node, err := topo.Discover(host.NewRoot(dir), nil, topo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, param := range []string{"", "numa_node_as_socket", "l3cache_as_socket"} {
				conf := "ClusterName=c\n"
				if param != "" {
					conf += "SlurmdParameters=" + param + "\n"
				}
				view, err := gresgen.ReadSlurmdView(slurmConfRoot(t, conf), "", "")
				if err != nil || view.Problem != "" {
					t.Fatal(err, view.Problem)
				}
				res, err := gresgen.Plan(node, gresgen.Options{Slurmd: view})
				if err != nil {
					t.Fatal(err)
				}
				var want slurmcores.Counts
				if param == "" {
					want, err = slurmcores.SlurmdCLinux(dir)
				} else {
					want, err = slurmcores.SlurmdRegistered(dir, param)
				}
				if err != nil {
					t.Fatal(err)
				}
				nl := res.Node
				got := slurmcores.Counts{CPUs: nl.CPUs, Boards: 1, Sockets: nl.Sockets, CoresPerSocket: nl.CoresPerSocket, ThreadsPerCore: nl.ThreadsPerCore}
				if got != want {
					t.Errorf("SlurmdParameters=%s: gpuprep-gres %s, slurmd %s", param, got, want)
				}
			}
		})
	}
}

// slurmConfRoot is a root holding only /etc/slurm/slurm.conf.
func slurmConfRoot(t *testing.T, conf string) host.Root {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/slurm/slurm.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return host.NewRoot(dir)
}

// oneNUMANode unpacks the fixture and makes its NUMA node 0 hold every
// CPU and memory, the others gone: a node with memory interleaved across
// sockets. hwloc then attaches the NUMA node to the machine, and slurmd
// under numa_node_as_socket counts one socket.
func oneNUMANode(t *testing.T, name string) string {
	t.Helper()
	dir := testroot.Unpack(t, name)
	base := filepath.Join(dir, "sys/devices/system/node")
	online, err := os.ReadFile(filepath.Join(dir, "sys/devices/system/cpu/online"))
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := filepath.Glob(filepath.Join(base, "node[0-9]*"))
	for _, n := range nodes {
		if filepath.Base(n) != "node0" {
			if err := os.RemoveAll(n); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(base, p), []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"online", "possible", "has_cpu", "has_memory", "has_normal_memory"} {
		write(f, "0")
	}
	write("node0/cpulist", cpus.String())
	write("node0/cpumap", cpuMask(cpus))
	write("node0/distance", "10")
	return dir
}

// cpuMask is the kernel's cpumap format: 32-bit hex words, most
// significant first, comma-separated.
func cpuMask(s cpuset.Set) string {
	words := make([]uint32, s.Max()/32+1)
	for _, c := range s.List() {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}
