package grescmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cli"
	"gpuprep/lib/slurm"
)

func gres(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(cli.Env{Args: args, Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), code
}

func TestGresOnCapturedH200(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	out, stderr, code := gres("--root", root, "--gpu-backend", "procfs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The real node: two H200 at 00:06.0 and 00:07.0, minors 0 and 1, one
	// NUMA node of 32 CPUs (nvidia-smi topo -m: CPU affinity 0-31).
	for _, want := range []string{
		"AutoDetect=off\n",
		"Name=gpu Type=nvidia_h200 File=/dev/nvidia0 Cores=0-31\n",
		"Name=gpu Type=nvidia_h200 File=/dev/nvidia1 Cores=0-31\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// What it prints, Slurm's parser rules read back, and --check agrees.
	path := filepath.Join(t.TempDir(), "gres.conf")
	os.WriteFile(path, []byte(out), 0o644)
	if _, err := slurm.ParseGresConf(path, []byte(out)); err != nil {
		t.Fatal(err)
	}
	if o, e, code := gres("--root", root, "--gpu-backend", "procfs", "--check", path); code != 0 {
		t.Errorf("--check of the generated file: exit %d\n%s%s", code, o, e)
	}
	line, _, _ := gres("--root", root, "--gpu-backend", "procfs", "--format", "slurm")
	if !strings.Contains(line, "CPUs=32 Sockets=1 CoresPerSocket=32 ThreadsPerCore=1") || !strings.Contains(line, "Gres=gpu:nvidia_h200:2") {
		t.Errorf("node line %q", line)
	}
}

func TestGresExitCodes(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	base := []string{"--root", root, "--gpu-backend", "procfs"}
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
		inStdout string
	}{
		{"help", []string{"-h"}, 0, "", "usage: gpuprep-gres"},
		{"version", []string{"--version"}, 0, "", "gpuprep-gres "},
		{"bad format", []string{"--format", "xml"}, 2, `--format "xml"`, ""},
		{"bad flag", []string{"--nope"}, 2, "unknown flag", ""},
		{"bad backend", []string{"--gpu-backend", "cuda"}, 2, "cuda", ""},
		{"missing check file", []string{"--check", filepath.Join(dir, "absent")}, 2, "absent", ""},
		{"unparsable gres.conf", []string{"--check", write("bad.conf", "AutoDetect=off\nName=gpu File=/dev/nvidia0 Links=1,x\n")}, 2, "bad.conf:2:", ""},
		{"mismatch", []string{"--check", write("wrong.conf", "Name=gpu Type=nvidia_h200 File=/dev/nvidia0 Cores=0-15\n")}, 1, "", "differs from the hardware"},
		{"bad config", []string{"--config", write("bad.toml", "[gres]\nnmae = \"gpu\"\n")}, 2, "bad.toml:2:", ""},
		{"missing config", []string{"--config", filepath.Join(dir, "none.toml")}, 2, "none.toml", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := gres(append(append([]string{}, base...), c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, stderr)
			}
			if !strings.Contains(stderr, c.inStderr) || !strings.Contains(out, c.inStdout) {
				t.Errorf("stdout %q / stderr %q, want %q / %q", out, stderr, c.inStdout, c.inStderr)
			}
			if c.code == 2 && c.name != "help" && strings.Count(strings.TrimSpace(stderr), "\n") > 0 && !strings.Contains(stderr, "Flags:") {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
}

// TestGresGarbageSysfs: a corrupt kernel file gives exit 2 and one line
// naming the file, never a panic or a wrong gres.conf.
func TestGresGarbageSysfs(t *testing.T) {
	for file, content := range map[string]string{
		"sys/devices/system/cpu/online":                            "0-x\n",
		"sys/devices/system/cpu/cpu0/topology/physical_package_id": "three\n",
		"sys/devices/system/cpu/cpu5/topology/core_cpus_list":      "7\n",
		"sys/devices/system/node/node0/cpulist":                    "31-0\n",
		"proc/driver/nvidia/gpus/0000:00:06.0/information":         "Model: NVIDIA H200\nDevice Minor: zero\n",
		"sys/bus/pci/devices/0000:00:06.0/local_cpulist":           "garbage\n",
	} {
		t.Run(file, func(t *testing.T) {
			root := testroot.Unpack(t, "h200x2")
			p := filepath.Join(root, file)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := gres("--root", root, "--gpu-backend", "procfs")
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, stderr)
			}
			if !strings.Contains(stderr, filepath.Base(file)) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr should be one line naming %s: %q", file, stderr)
			}
		})
	}
}

func TestGresMockDGXH100(t *testing.T) {
	root := testroot.Shared(t, "dgxh100")
	out, stderr, code := gres("--root", root, "--gpu-backend", "mock:dgxh100", "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// GPU 0 sits at 0000:18:00.0 with device minor 2, local to socket 0,
	// next to mlx5_0 behind the same PCIe switch, NV18 to every peer.
	if !regexpMatch(`(?m)^0\s+0000:18:00\.0\s+/dev/nvidia2\s+nvidia_h100_80gb_hbm3\s+0\s+0-55\s+0-55,112-167\s+mlx5_0\(PIX\)\s+X NV18`, out) {
		t.Errorf("table:\n%s", out)
	}
	cfg := filepath.Join(t.TempDir(), "g.toml")
	os.WriteFile(cfg, []byte("[gres.type_names]\nnvidia_h100_80gb_hbm3 = \"h100\"\n"), 0o644)
	out, _, _ = gres("--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--format", "slurm")
	if !strings.Contains(out, "NodeName=dgxh100-01 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2") || !strings.Contains(out, "Gres=gpu:h100:8") {
		t.Errorf("node line with short names: %q", out)
	}
}

// TestGresNUMASmallerThanSocket: on an NPS4 node numa_as_socket = "auto"
// (the default) counts NUMA nodes as sockets and says that slurm.conf needs
// numa_node_as_socket; --numa-as-socket=false or numa_as_socket = false
// count real sockets and warn that the GPUs' cores split them.
func TestGresNUMASmallerThanSocket(t *testing.T) {
	root := testroot.Shared(t, "dgxa100")
	base := []string{"--root", root, "--gpu-backend", "mock:dgxa100"}
	out, stderr, code := gres(append(base, "--format", "slurm")...)
	if code != 0 || !strings.HasPrefix(out, "# needs SlurmdParameters=numa_node_as_socket in slurm.conf\n") ||
		!strings.Contains(out, "Sockets=8 CoresPerSocket=16 ThreadsPerCore=2") ||
		!strings.Contains(stderr, `warning: numa_as_socket = "auto": the node line counts the 8 NUMA nodes as sockets`) ||
		strings.Contains(stderr, "socket boundaries") {
		t.Errorf("auto: exit %d\n%s%s", code, out, stderr)
	}
	out, _, _ = gres(base...)
	if !strings.Contains(out, "# slurm.conf needs SlurmdParameters=numa_node_as_socket for this node\n") {
		t.Errorf("auto: gres.conf does not say slurm.conf needs numa_node_as_socket:\n%s", out)
	}
	out, stderr, _ = gres(append(base, "--numa-as-socket", "--format", "slurm")...)
	if !strings.Contains(out, "Sockets=8 CoresPerSocket=16 ThreadsPerCore=2") || strings.Contains(stderr, "socket boundaries") || strings.Contains(stderr, "auto") {
		t.Errorf("--numa-as-socket: %q / %q", out, stderr)
	}
	noConf := filepath.Join(t.TempDir(), "false.toml")
	os.WriteFile(noConf, []byte("[gres]\nnuma_as_socket = false\n"), 0o644)
	for _, args := range [][]string{{"--numa-as-socket=false"}, {"--config", noConf}} {
		out, stderr, _ := gres(append(append(base, args...), "--format", "slurm")...)
		if !strings.Contains(out, "Sockets=2 CoresPerSocket=64") || strings.Contains(out, "numa_node_as_socket") ||
			!strings.Contains(stderr, "socket boundaries") || !strings.Contains(stderr, "numa_node_as_socket") {
			t.Errorf("%v: %q / %q", args, out, stderr)
		}
	}
	// A node whose NUMA nodes are its sockets: auto changes nothing.
	out, stderr, _ = gres("--root", testroot.Shared(t, "dgxh100"), "--gpu-backend", "mock:dgxh100", "--format", "slurm")
	if strings.Contains(out, "numa_node_as_socket") || !strings.Contains(out, "Sockets=2 CoresPerSocket=56") || strings.Contains(stderr, "auto") {
		t.Errorf("dgxh100: %q / %q", out, stderr)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestAgreesWithNvidiaSMITopo holds what gpuprep-gres said on the real 2x H200
// node (test/roots/h200x2-ref/gres-nvml.conf, real NVML) and what it says now
// on that node's captured root against `nvidia-smi topo -m` captured there:
// the same GPUs, CPU affinity and NV# link counts.
func TestAgreesWithNvidiaSMITopo(t *testing.T) {
	mod, _ := testroot.ModuleRoot()
	ref := filepath.Join(mod, "test/roots/h200x2-ref")
	topoText, err := os.ReadFile(filepath.Join(ref, "topo-m.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Rows look like "GPU0\t X \tNV18\t0-31\t0\t\tN/A".
	var links [][]string
	var affinity []string
	for _, l := range strings.Split(string(topoText), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 4 || !strings.HasPrefix(f[0], "GPU") {
			continue
		}
		row := []string{}
		for _, c := range f[1:] {
			c = strings.TrimSpace(c)
			if c == "X" || strings.HasPrefix(c, "NV") {
				row = append(row, c)
			}
		}
		links = append(links, row)
		affinity = append(affinity, strings.TrimSpace(f[1+len(row)]))
	}
	if len(links) != 2 {
		t.Fatalf("topo -m rows: %v", links)
	}
	nvmlConf, err := os.ReadFile(filepath.Join(ref, "gres-nvml.conf"))
	if err != nil {
		t.Fatal(err)
	}
	real, err := slurm.ParseGresConf("gres-nvml.conf", nvmlConf)
	if err != nil {
		t.Fatal(err)
	}
	devs := real.ForNode("vm")
	root := testroot.Shared(t, "h200x2")
	out, _, _ := gres("--root", root, "--gpu-backend", "procfs")
	captured, err := slurm.ParseGresConf("procfs", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	procDevs := captured.ForNode("vm")
	if len(devs) != len(links) || len(procDevs) != len(links) {
		t.Fatalf("GPUs: topo -m %d, NVML gres %d, procfs gres %d", len(links), len(devs), len(procDevs))
	}
	for i, row := range links {
		for j, cell := range row {
			want := -1
			if cell != "X" {
				want, _ = strconv.Atoi(strings.TrimPrefix(cell, "NV"))
			}
			if devs[i].Links[j] != want {
				t.Errorf("GPU%d->GPU%d: topo -m %s, gpuprep Links %d", i, j, cell, devs[i].Links[j])
			}
		}
		// One socket of 32 cores without SMT: core ids equal CPU ids.
		for name, d := range map[string]slurm.GresDevice{"nvml": devs[i], "procfs": procDevs[i]} {
			if d.Cores.String() != affinity[i] {
				t.Errorf("GPU%d (%s): Cores=%s, topo -m CPU affinity %s", i, name, d.Cores, affinity[i])
			}
		}
	}
}
