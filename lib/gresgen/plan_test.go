package gresgen

import (
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/topo"
)

// twoSocketNode is a 2-socket, 4-cores-per-socket, SMT node with Linux's split
// thread numbering (socket 0: CPUs 0-3 and 8-11) and GPUs as given.
func twoSocketNode(gpus ...topo.GPU) *topo.Node {
	n := &topo.Node{Hostname: "n1", MemoryMiB: 1000}
	for s := 0; s < 2; s++ {
		sock := topo.Socket{ID: s}
		for c := 0; c < 4; c++ {
			id := s*4 + c
			cpus := cpuset.New(id, id+8)
			n.Cores = append(n.Cores, topo.Core{ID: id, Socket: s, CPUs: cpus})
			sock.Cores = append(sock.Cores, id)
			sock.CPUs = sock.CPUs.Union(cpus)
		}
		n.Sockets = append(n.Sockets, sock)
		n.NUMA = append(n.NUMA, topo.NUMANode{ID: s, CPUs: sock.CPUs})
	}
	for i := 0; i < 16; i++ {
		n.CPUs = append(n.CPUs, topo.CPU{ID: i})
	}
	n.GPUs = gpus
	return n
}

func mkGPU(index, minor int, bus string, numa int, cores string, links []int) topo.GPU {
	return topo.GPU{
		Device: gpu.Device{Index: index, Minor: minor, BusID: bus, Name: "NVIDIA H100 80GB HBM3", NVLinks: links},
		NUMA:   numa, Cores: cpuset.MustParse(cores),
	}
}

func TestPlanOrdersByBusAndUsesMinors(t *testing.T) {
	// Devices arrive out of order; minors differ from indexes.
	node := twoSocketNode(
		mkGPU(1, 0, "0000:9a:00.0", 1, "4-7", []int{4, -1}),
		mkGPU(0, 3, "0000:18:00.0", 0, "0-3", []int{-1, 4}),
	)
	res, err := Plan(node, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices) != 2 {
		t.Fatalf("want 2 records, got %d", len(res.Devices))
	}
	d0, d1 := res.Devices[0], res.Devices[1]
	if d0.BusID != "0000:18:00.0" || d0.File != "/dev/nvidia3" || d1.File != "/dev/nvidia0" {
		t.Errorf("records not in bus order with minor files: %+v %+v", d0, d1)
	}
	if d0.Type != "nvidia_h100_80gb_hbm3" {
		t.Errorf("type %q", d0.Type)
	}
	if !slices.Equal(d0.Links, []int{-1, 4}) || !slices.Equal(d1.Links, []int{4, -1}) {
		t.Errorf("links %v %v", d0.Links, d1.Links)
	}
	if d0.Cores.String() != "0-3" || d1.Cores.String() != "4-7" {
		t.Errorf("cores %s %s", d0.Cores, d1.Cores)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("unexpected warnings %v", res.Warnings)
	}
	want := "NodeName=n1 CPUs=16 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:nvidia_h100_80gb_hbm3:2"
	if got := res.Node.String(); got != want {
		t.Errorf("node line\n got %s\nwant %s", got, want)
	}
}

func TestPlanShortNamesAndMIG(t *testing.T) {
	g0 := mkGPU(0, 0, "0000:07:00.0", 0, "0-3", []int{-1, 12})
	g0.MIG = gpu.MIGState{Capable: true, Current: true, Devices: []gpu.MIGDevice{
		{Profile: "3g.40gb", GI: 1, CI: 0, GICapMinor: 12, CICapMinor: 13},
		{Profile: "1g.10gb", GI: 9, CI: 0, GICapMinor: 84, CICapMinor: 85},
	}}
	g1 := mkGPU(1, 1, "0000:0f:00.0", 0, "0-3", []int{12, -1})
	node := twoSocketNode(g0, g1)
	res, err := Plan(node, Options{TypeNames: map[string]string{"nvidia_h100_80gb_hbm3": "h100"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices) != 3 {
		t.Fatalf("want 2 MIG + 1 GPU records, got %+v", res.Devices)
	}
	m := res.Devices[0]
	if m.Type != "h100_3g.40gb" || strings.Join(m.MultipleFiles, ",") != "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13" {
		t.Errorf("MIG record %+v", m)
	}
	if res.Devices[2].Type != "h100" || res.Devices[2].Links != nil {
		t.Errorf("whole GPU next to MIG: %+v (Links must be left out)", res.Devices[2])
	}
	if !strings.Contains(res.Node.String(), "Gres=gpu:h100_3g.40gb:1,gpu:h100_1g.10gb:1,gpu:h100:1") {
		t.Errorf("node line %s", res.Node)
	}
}

func TestPlanWarnsWhenCoresSplitSockets(t *testing.T) {
	// Two NUMA nodes per socket: each GPU is local to half a socket.
	node := twoSocketNode(mkGPU(0, 0, "0000:01:00.0", 0, "0-1", nil), mkGPU(1, 1, "0000:02:00.0", 1, "2-3", nil))
	node.NUMA = []topo.NUMANode{
		{ID: 0, CPUs: cpuset.MustParse("0-1,8-9")}, {ID: 1, CPUs: cpuset.MustParse("2-3,10-11")},
		{ID: 2, CPUs: cpuset.MustParse("4-5,12-13")}, {ID: 3, CPUs: cpuset.MustParse("6-7,14-15")},
	}
	res, _ := Plan(node, Options{})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Fix, "numa_node_as_socket") {
		t.Fatalf("want one warning suggesting numa_node_as_socket, got %v", res.Warnings)
	}
	res, _ = Plan(node, Options{Sockets: SocketsNUMA, SocketsBy: "--numa-as-socket"})
	if len(res.Warnings) != 0 || !res.NeedsNUMAAsSocket || res.Node.Sockets != 4 || res.Node.CoresPerSocket != 2 {
		t.Errorf("with NUMA nodes as sockets: warnings %v, node %s", res.Warnings, res.Node)
	}
}

func TestCheckReportsEachDifference(t *testing.T) {
	node := twoSocketNode(
		mkGPU(0, 1, "0000:18:00.0", 0, "0-3", []int{-1, 4}),
		mkGPU(1, 0, "0000:9a:00.0", 1, "4-7", []int{4, -1}),
	)
	res, _ := Plan(node, Options{})
	conf, err := gresconf.Parse("gres.conf", []byte(`AutoDetect=nvml
Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-3,8-11 Links=-1,4
Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia7 Cores=4-7
`))
	if err != nil {
		t.Fatal(err)
	}
	diffs := Check(node, res, conf, Options{})
	text := ""
	for _, d := range diffs {
		text += d.String() + "\n"
	}
	for _, want := range []string{
		"AutoDetect=nvml",
		"line 2: GPU 0 (0000:18:00.0, /dev/nvidia1): Type=h100",
		"Cores=0-3,8-11, but the GPU is local to cores 0-3 (OS CPUs 0-3,8-11); Cores= names ids beyond the node's 8 cores: these look like OS CPU ids",
		"GPU 1 (0000:9a:00.0, /dev/nvidia0) is missing",
		"line 3: /dev/nvidia7 is not a GPU device of this node",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if len(diffs) != 5 {
		t.Errorf("want 5 differences, got %d:\n%s", len(diffs), text)
	}
	// The generated file itself matches.
	var b strings.Builder
	if err := WriteGres(&b, node, res, "test"); err != nil {
		t.Fatal(err)
	}
	conf, err = gresconf.Parse("gen", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d := Check(node, res, conf, Options{}); len(d) != 0 {
		t.Errorf("generated file does not match itself: %v\n%s", d, b.String())
	}
}

func TestSlurmType(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H100 80GB HBM3": "nvidia_h100_80gb_hbm3",
		"NVIDIA A100-SXM4-40GB": "nvidia_a100-sxm4-40gb",
		" NVIDIA H200 ":         "nvidia_h200",
		"NVIDIA GH200 480GB":    "nvidia_gh200_480gb",
	} {
		if got := SlurmType(in); got != want {
			t.Errorf("SlurmType(%q) = %q, want %q", in, got, want)
		}
	}
	names := map[string]string{"NVIDIA H200": "h200"}
	if got := TypeFor("NVIDIA H200", names); got != "h200" {
		t.Errorf("TypeFor by product name = %q", got)
	}
}
