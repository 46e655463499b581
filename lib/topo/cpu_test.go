package topo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/host"
)

// writeTree writes files (node path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pairCPUs is a 4-CPU socket whose CPUs pair up in core_cpus_list (0,1 and
// 2,3), each with the given core_id, every list ending in end.
func pairCPUs(coreIDs [4]int, end string) map[string]string {
	files := map[string]string{cpuBase + "/online": "0-3" + end}
	for cpu := 0; cpu < 4; cpu++ {
		d := fmt.Sprintf("%s/cpu%d/topology/", cpuBase, cpu)
		files[d+"physical_package_id"] = "0\n"
		files[d+"package_cpus_list"] = "0-3" + end
		files[d+"core_cpus_list"] = fmt.Sprintf("%d-%d%s", cpu&^1, cpu|1, end)
		files[d+"core_id"] = fmt.Sprintf("%d\n", coreIDs[cpu])
	}
	return files
}

func discoverCPUs(t *testing.T, files map[string]string) *Node {
	t.Helper()
	n, err := Discover(host.NewRoot(writeTree(t, files)), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func coreLists(n *Node) string { return strings.Join(coreCPUs(n.Cores), " ") }

// TestListsEndingInNUL: some arm64 kernels end list files in "\n\x00".
func TestListsEndingInNUL(t *testing.T) {
	n := discoverCPUs(t, pairCPUs([4]int{0, 0, 1, 1}, "\n\x00"))
	if got := coreLists(n); got != "0-1 2-3" || len(n.Sockets) != 1 {
		t.Errorf("cores %s sockets %d", got, len(n.Sockets))
	}
}

// TestComputeUnits: threads sharing core_cpus with different core_id are
// cores of one thread on AMD family 21 (Bulldozer), as hwloc and slurmd -C
// count them, and threads of one core elsewhere.
func TestComputeUnits(t *testing.T) {
	files := pairCPUs([4]int{0, 1, 2, 3}, "\n")
	files["/proc/cpuinfo"] = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 21\n\n"
	n := discoverCPUs(t, files)
	if got := coreLists(n); got != "0 1 2 3" || n.ThreadsPerCore() != 1 {
		t.Errorf("Bulldozer: cores %s", got)
	}
	files["/proc/cpuinfo"] = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\n"
	if got := coreLists(discoverCPUs(t, files)); got != "0-1 2-3" {
		t.Errorf("Intel: cores %s", got)
	}
}

// TestNoOnlineFile: without cpu/online (old kernels) the online CPUs are the
// cpu<N> directories whose online file does not say 0.
func TestNoOnlineFile(t *testing.T) {
	files := pairCPUs([4]int{0, 0, 1, 1}, "\n")
	delete(files, cpuBase+"/online")
	files[cpuBase+"/cpu1/online"] = "1\n"
	files[cpuBase+"/cpu3/online"] = "0\n"
	files[cpuBase+"/cpufreq/policy0/scaling_governor"] = "performance\n"
	n := discoverCPUs(t, files)
	if got := coreLists(n); got != "0-1 2" || len(n.CPUs) != 3 {
		t.Errorf("cores %s, %d CPUs", got, len(n.CPUs))
	}
	set, err := OnlineCPUs(host.NewRoot(writeTree(t, map[string]string{cpuBase + "/possible": "0-3\n"})))
	if err == nil || !strings.Contains(err.Error(), "no cpu<N> directory") {
		t.Errorf("no CPUs at all: %s, %v", set, err)
	}
}

// TestGarbageTopology: a list that does not hold its own CPU is an error
// naming the file.
func TestGarbageTopology(t *testing.T) {
	files := pairCPUs([4]int{0, 0, 1, 1}, "\n")
	files[cpuBase+"/cpu2/topology/core_cpus_list"] = "0-1\n"
	_, err := Discover(host.NewRoot(writeTree(t, files)), nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "cpu2/topology/core_cpus_list") {
		t.Errorf("err = %v", err)
	}
}
