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
	"gpuprep/lib/gresconf"
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
	if _, err := gresconf.Parse(path, []byte(out)); err != nil {
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

// TestGresNUMASmallerThanSocket: on an NPS4 node (dgxa100: 2 sockets, 8
// NUMA nodes, 32 L3 caches) the default node line counts what slurmd will
// register: real sockets where no slurm.conf is found (saying so, and that
// the GPUs' cores split them, with the fix), NUMA nodes where slurm.conf
// sets numa_node_as_socket, L3 caches with l3cache_as_socket.
// --numa-as-socket and numa_as_socket = false win, with a warning where
// slurmd will count otherwise.
func TestGresNUMASmallerThanSocket(t *testing.T) {
	root := testroot.Shared(t, "dgxa100")
	base := []string{"--root", root, "--gpu-backend", "procfs"}
	dir := t.TempDir()
	numaConf := filepath.Join(dir, "numa.conf")
	os.WriteFile(numaConf, []byte("ClusterName=c\nSlurmdParameters=numa_node_as_socket\n"), 0o644)
	l3Conf := filepath.Join(dir, "l3.conf")
	os.WriteFile(l3Conf, []byte("SlurmdParameters=l3cache_as_socket\n"), 0o644)
	falseCfg := filepath.Join(dir, "false.toml")
	os.WriteFile(falseCfg, []byte("[gres]\nnuma_as_socket = false\n"), 0o644)
	cases := []struct {
		name      string
		args      []string
		line      string
		first     string // the output's first line
		inStderr  []string
		notStderr string
	}{
		{"no slurm.conf", nil, "Sockets=2 CoresPerSocket=64 ThreadsPerCore=2",
			"# Sockets=2 counts real sockets, as slurmd will: no slurm.conf found (SLURM_CONF is not set; neither /etc/slurm/slurm.conf nor /run/slurm/conf/slurm.conf exists)",
			[]string{"socket boundaries", "the node line counts real sockets, as slurmd will: no slurm.conf found",
				"fix: set SlurmdParameters=numa_node_as_socket in slurm.conf, restart slurmd"}, ""},
		{"numa_node_as_socket", []string{"--slurm-conf", numaConf}, "Sockets=8 CoresPerSocket=16 ThreadsPerCore=2",
			"# Sockets=8 counts NUMA nodes, as slurmd will: " + numaConf + ":2 sets SlurmdParameters=numa_node_as_socket",
			nil, "socket boundaries"},
		{"l3cache_as_socket", []string{"--slurm-conf", l3Conf}, "Sockets=32 CoresPerSocket=4 ThreadsPerCore=2",
			"# Sockets=32 counts L3 caches, as slurmd will: " + l3Conf + ":1 sets SlurmdParameters=l3cache_as_socket",
			nil, "socket boundaries"},
		{"--numa-as-socket", []string{"--numa-as-socket"}, "Sockets=8 CoresPerSocket=16",
			"# needs SlurmdParameters=numa_node_as_socket in slurm.conf", nil, "socket boundaries"},
		{"--numa-as-socket=false", []string{"--numa-as-socket=false", "--slurm-conf", numaConf}, "Sockets=2 CoresPerSocket=64",
			"# Sockets=2 counts real sockets, as --numa-as-socket=false asks",
			[]string{"socket boundaries", "slurmd will register Sockets=8: " + numaConf + ":2 sets SlurmdParameters=numa_node_as_socket"}, ""},
		{"numa_as_socket = false", []string{"--config", falseCfg}, "Sockets=2 CoresPerSocket=64",
			"# Sockets=2 counts real sockets, as [gres] numa_as_socket = false asks",
			[]string{"socket boundaries", "without [gres] numa_as_socket = false"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := gres(append(append(append([]string{}, base...), c.args...), "--format", "slurm")...)
			first, _, _ := strings.Cut(out, "\n")
			if code != 0 || !strings.Contains(out, c.line) || first != c.first ||
				(c.notStderr != "" && strings.Contains(stderr, c.notStderr)) {
				t.Errorf("exit %d, want %q first and %q\n%s%s", code, c.first, c.line, out, stderr)
			}
			for _, w := range c.inStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	out, _, _ := gres(append(base, "--numa-as-socket")...)
	if !strings.Contains(out, "# slurm.conf needs SlurmdParameters=numa_node_as_socket for this node\n") {
		t.Errorf("--numa-as-socket: gres.conf does not say slurm.conf needs numa_node_as_socket:\n%s", out)
	}
	out, _, _ = gres(append(base, "--slurm-conf", numaConf)...)
	if strings.Contains(out, "needs") {
		t.Errorf("slurm.conf with numa_node_as_socket: gres.conf says it needs it:\n%s", out)
	}
	// A node whose NUMA nodes are its sockets: no warning either way.
	for _, args := range [][]string{nil, {"--slurm-conf", numaConf}} {
		out, stderr, _ := gres(append([]string{"--root", testroot.Shared(t, "dgxh100"), "--gpu-backend", "mock:dgxh100", "--format", "slurm"}, args...)...)
		if strings.Contains(out, "needs") || !strings.Contains(out, "Sockets=2 CoresPerSocket=56") || stderr != "" {
			t.Errorf("dgxh100 %v: %q / %q", args, out, stderr)
		}
	}
}

// TestGresCheckNodeLine: --check also holds the slurm.conf NodeName= line
// for this node against what slurmd will register. A line written with
// NUMA nodes as sockets (the NPS4 node line gpuprep-gres used to print by
// default) is a mismatch where slurm.conf lacks numa_node_as_socket, and
// right where it has it; so is the real-socket line the other way round.
func TestGresCheckNodeLine(t *testing.T) {
	root := testroot.Shared(t, "dgxa100")
	base := []string{"--root", root, "--gpu-backend", "procfs"}
	dir := t.TempDir()
	gresConf, stderr, code := gres(base...)
	if code != 0 {
		t.Fatal(stderr)
	}
	gresFile := filepath.Join(dir, "gres.conf")
	os.WriteFile(gresFile, []byte(gresConf), 0o644)
	numaLine := "NodeName=dgxa100-0[1-4] CPUs=256 Sockets=8 CoresPerSocket=16 ThreadsPerCore=2 Gres=gpu:9\n"
	realLine := "NodeName=dgxa100-01 CPUs=256 Boards=1 SocketsPerBoard=2 CoresPerSocket=64 ThreadsPerCore=2\n"
	for _, c := range []struct {
		name, conf string
		code       int
		report     string
	}{
		{"NUMA line, no parameter", "ClusterName=c\n" + numaLine, 1,
			"slurm.conf:2: NodeName=dgxa100-01 has Sockets=8 CoresPerSocket=16, but slurmd will register Sockets=2 CoresPerSocket=64 (it counts real sockets: "},
		{"NUMA line with numa_node_as_socket", "SlurmdParameters=numa_node_as_socket\n" + numaLine, 0, "matches the hardware"},
		{"real line", realLine, 0, "matches the hardware"},
		{"real line with numa_node_as_socket", "SlurmdParameters=numa_node_as_socket\n" + realLine, 1,
			"has SocketsPerBoard=2 CoresPerSocket=64, but slurmd will register SocketsPerBoard=8 CoresPerSocket=16 (it counts NUMA nodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "slurm.conf")
			os.WriteFile(conf, []byte(c.conf), 0o644)
			out, stderr, code := gres(append(base, "--check", gresFile, "--slurm-conf", conf)...)
			if code != c.code || !strings.Contains(out, c.report) {
				t.Errorf("exit %d, want %d and %q:\n%s%s", code, c.code, c.report, out, stderr)
			}
		})
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
	real, err := gresconf.Parse("gres-nvml.conf", nvmlConf)
	if err != nil {
		t.Fatal(err)
	}
	devs := real.ForNode("vm")
	root := testroot.Shared(t, "h200x2")
	out, _, _ := gres("--root", root, "--gpu-backend", "procfs")
	captured, err := gresconf.Parse("procfs", []byte(out))
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
		for name, d := range map[string]gresconf.Device{"nvml": devs[i], "procfs": procDevs[i]} {
			if d.Cores.String() != affinity[i] {
				t.Errorf("GPU%d (%s): Cores=%s, topo -m CPU affinity %s", i, name, d.Cores, affinity[i])
			}
		}
	}
}
