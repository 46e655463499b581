package gresgen

import (
	"strconv"
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/topo"
)

// fourGPUs is twoSocketNode with four H100s, minors 0-3 and indexes 0-3
// in bus order; GPU 3 is an H200.
func fourGPUs() *topo.Node {
	g := []topo.GPU{
		mkGPU(0, 0, "0000:18:00.0", 0, "0-3", nil), mkGPU(1, 1, "0000:2a:00.0", 0, "0-3", nil),
		mkGPU(2, 2, "0000:9a:00.0", 1, "4-7", nil), mkGPU(3, 3, "0000:ab:00.0", 1, "4-7", nil),
	}
	g[3].Name = "NVIDIA H200"
	return twoSocketNode(g...)
}

// gresText is WriteGres's output and the node line for opt.
func gresText(t *testing.T, node *topo.Node, opt Options) (*Result, string, string) {
	t.Helper()
	res, err := Plan(node, opt)
	if err != nil {
		t.Fatal(err)
	}
	var gres, line strings.Builder
	if err := WriteGres(&gres, node, res, "test"); err != nil {
		t.Fatal(err)
	}
	if err := WriteNodeLine(&line, res); err != nil {
		t.Fatal(err)
	}
	return res, gres.String(), line.String()
}

// The GPUs [gres] mps_gpus marks get "Name=mps File=/dev/nvidiaN
// Count=<mps_count>" after the GPU records, the others none; the node
// line's Gres= ends in mps:<total>, and both say what slurm.conf needs.
func TestMPSRecords(t *testing.T) {
	node := fourGPUs()
	opt := Options{TypeNames: map[string]string{"nvidia_h100_80gb_hbm3": "h100"}, MPSGPUs: config.GPUSelection{"0", "2"}, MPSCount: 100}
	res, gres, line := gresText(t, node, opt)
	for _, want := range []string{
		"\nName=gpu Type=nvidia_h200 File=/dev/nvidia3 Cores=4-7\n" +
			"Name=mps File=/dev/nvidia0 Count=100\nName=mps File=/dev/nvidia2 Count=100\n",
		"# 2 Name=mps records (Count=100 each, [gres] mps_gpus): slurm.conf needs GresTypes=gpu,mps, the node's Gres= with mps:200, and SelectType=select/cons_tres\n",
	} {
		if !strings.Contains(gres, want) {
			t.Errorf("gres.conf lacks %q:\n%s", want, gres)
		}
	}
	if !strings.HasSuffix(line, " Gres=gpu:h100:3,gpu:nvidia_h200:1,mps:200\n") || !strings.Contains(line, "# 2 Name=mps records") {
		t.Errorf("node line:\n%s", line)
	}
	// What Slurm reads back: each GPU's share on its own file.
	conf, err := gresconf.Parse("gen", []byte(gres))
	if err != nil {
		t.Fatal(err)
	}
	var mps []string
	for _, d := range conf.ForNode("n1") {
		if d.Name == "mps" {
			mps = append(mps, d.File+":"+strings.Repeat("x", int(d.Count/100)))
		}
	}
	if strings.Join(mps, " ") != "/dev/nvidia0:x /dev/nvidia2:x" {
		t.Errorf("mps records read back %v", mps)
	}
	if d := Check(node, res, conf, opt); len(d) != 0 {
		t.Errorf("the generated file does not match itself: %v", d)
	}

	// By type, as written or as Slurm names it, and by model.
	for sel, want := range map[string]int{"h100": 3, "nvidia_h200": 1, "NVIDIA H200": 1, "all": 4, "none": 0} {
		opt.MPSGPUs = config.GPUSelection{sel}
		res, _, line := gresText(t, node, opt)
		if len(res.MPS) != want || (want > 0) != strings.Contains(line, ",mps:") {
			t.Errorf("mps_gpus = %q: %d records, want %d; node line %s", sel, len(res.MPS), want, line)
		}
	}
	opt.MPSGPUs, opt.MPSCount = config.GPUSelection{"7"}, 0
	res, gres, _ = gresText(t, node, opt)
	if len(res.MPS) != 0 || !strings.Contains(gres, `# warning: [gres] mps_gpus = [7] marks none of this node's GPUs (0 nvidia_h100_80gb_hbm3, 1 nvidia_h100_80gb_hbm3, 2 nvidia_h100_80gb_hbm3, 3 nvidia_h200)`) {
		t.Errorf("unmatched selection: %d records\n%s", len(res.MPS), gres)
	}
	opt.MPSGPUs = config.GPUSelection{"3"}
	if res, _, _ = gresText(t, node, opt); len(res.MPS) != 1 || res.MPS[0].Count != config.DefaultMPSCount {
		t.Errorf("mps_count 0: %+v, want the built-in count", res.MPS)
	}
}

// A marked GPU in MIG mode gets no mps record, and a warning says why.
func TestMPSSkipsMIG(t *testing.T) {
	node := fourGPUs()
	node.GPUs[1].MIG = gpu.MIGState{Capable: true, Current: true, Devices: []gpu.MIGDevice{{Profile: "3g.40gb", GI: 1, GICapMinor: 12, CICapMinor: 13}}}
	res, gres, _ := gresText(t, node, Options{MPSGPUs: config.GPUSelection{"all"}})
	if len(res.MPS) != 3 || strings.Contains(gres, "Name=mps File=/dev/nvidia1 ") ||
		!strings.Contains(gres, "# warning: no Name=mps record for GPU 1 (0000:2a:00.0) in MIG mode") {
		t.Errorf("%d mps records:\n%s", len(res.MPS), gres)
	}
}

// --check compares Name=mps records where mps_gpus marks GPUs: a missing
// one, another count, one on an unmarked GPU, one without File=; with
// nothing marked, the site's own mps lines are left alone.
func TestCheckMPS(t *testing.T) {
	node := fourGPUs()
	opt := Options{MPSGPUs: config.GPUSelection{"0", "2"}, MPSCount: 100}
	res, gres, _ := gresText(t, node, opt)
	var gpuLines string
	for _, l := range strings.SplitAfter(gres, "\n") {
		if !strings.HasPrefix(l, "Name=mps") {
			gpuLines += l
		}
	}
	conf, err := gresconf.Parse("gres.conf", []byte(gpuLines+"Name=mps File=/dev/nvidia2 Count=50\nName=mps File=/dev/nvidia3 Count=100\nName=mps Count=400\n"))
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, d := range Check(node, res, conf, opt) {
		text = append(text, d.String())
	}
	lines := strings.Count(gpuLines, "\n")
	want := []string{
		"line " + strconv.Itoa(lines+3) + ": Name=mps Count=400 without File=: Slurm spreads it over every GPU, but [gres] mps_gpus = [0, 2] marks some",
		"GPU 0 (0000:18:00.0, /dev/nvidia0) has no Name=mps record: want Name=mps File=/dev/nvidia0 Count=100 ([gres] mps_gpus)",
		"line " + strconv.Itoa(lines+1) + ": Name=mps File=/dev/nvidia2 Count=50, but [gres] mps_count = 100",
		"line " + strconv.Itoa(lines+2) + ": Name=mps File=/dev/nvidia3: [gres] mps_gpus = [0, 2] does not mark this GPU",
	}
	if strings.Join(text, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences\n%s\nwant\n%s", strings.Join(text, "\n"), strings.Join(want, "\n"))
	}
	res, _, _ = gresText(t, node, Options{})
	if d := Check(node, res, conf, Options{}); len(d) != 0 {
		t.Errorf("nothing marked: %v", d)
	}
}
