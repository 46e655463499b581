package grescmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// TestGresSNCInterleaved: a dual Xeon in SNC2 with round-robin CPU numbering
// (snc2xeon: sub-NUMA node 0 of socket 0 holds CPUs 0,4,8,..., node 1 holds
// 2,6,10,...), one GPU on every sub-NUMA node. Slurm numbers the cores of a
// NUMA node together, so each GPU gets ten consecutive core ids; sorting a
// socket's cores by first CPU would give GPU 0 every other core. --check
// accepts the right file and names the cores of the wrong one.
func TestGresSNCInterleaved(t *testing.T) {
	root := testroot.Shared(t, "snc2xeon")
	base := []string{"--root", root, "--gpu-backend", "procfs"}
	out, stderr, code := gres(base...)
	for i, cores := range []string{"0-9", "10-19", "20-29", "30-39"} {
		want := "File=/dev/nvidia" + string(rune('0'+i)) + " Cores=" + cores + "\n"
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("GPU %d: want %q; exit %d\n%s%s", i, want, code, out, stderr)
		}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	os.WriteFile(good, []byte(out), 0o644)
	if out, stderr, code := gres(append(base, "--check", good)...); code != 0 {
		t.Errorf("--check of the generated file: exit %d\n%s%s", code, out, stderr)
	}
	// Cores by first CPU within each socket: GPU 0 (node 0) would get
	// 0,2,4,...,18 and GPU 1 (node 1) 1,3,...,19.
	wrong := strings.Replace(strings.Replace(out, "Cores=0-9\n", "Cores=0,2,4,6,8,10,12,14,16,18\n", 1),
		"Cores=10-19\n", "Cores=1,3,5,7,9,11,13,15,17,19\n", 1)
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte(wrong), 0o644)
	report, stderr, code := gres(append(base, "--check", bad)...)
	if code == 0 || !strings.Contains(report+stderr, "0-9") || !strings.Contains(report+stderr, "10-19") {
		t.Errorf("--check of first-CPU core ids: exit %d\n%s%s", code, report, stderr)
	}
}

// TestGresOddCPULayouts: gres runs on every CPU layout of the fixtures and
// its node line counts what slurmd -C counts there (lib/topo holds the core
// ids against Slurm's): AMD compute units are cores of one thread, sockets
// are told apart by their masks when physical_package_id is -1, offline
// CPUs are left out.
func TestGresOddCPULayouts(t *testing.T) {
	for _, c := range []struct{ root, line string }{
		{"bulldozer", "CPUs=32 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1"},
		{"thunderx2", "CPUs=224 Sockets=2 CoresPerSocket=28 ThreadsPerCore=4"},
		{"altra", "CPUs=80 Sockets=1 CoresPerSocket=80 ThreadsPerCore=1"},
		{"oldkernel", "CPUs=14 Sockets=1 CoresPerSocket=7 ThreadsPerCore=2"},
	} {
		out, stderr, code := gres("--root", testroot.Shared(t, c.root), "--gpu-backend", "procfs", "--format", "slurm")
		if code != 0 || !strings.Contains(out, c.line) {
			t.Errorf("%s: want %q; exit %d\n%s%s", c.root, c.line, code, out, stderr)
		}
	}
}
