package gresgen_test

import (
	"bytes"
	"strings"
	"testing"

	_ "gpuprep/internal/gpumock" // --gpu-backend mock:<model>
	"gpuprep/internal/oracleroot"
	"gpuprep/internal/slurmcores"
	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// TestGresConfAgainstSlurmd holds the gres.conf and node line gpuprep-gres
// prints for each GPU fixture root against slurmd's own reading of them
// (`slurmd -D -G`, this machine's or $GPUPREP_ORACLE_ROOT's Slurm, with the
// fixture's CPUs through HWLOC_FSROOT and the device files made with
// mknod): slurmd lists every generated record, with the same Type=, device
// files, Cores= and Links=, and says nothing about gres.conf (no error: or
// warning: line, such as gres.conf and the node line's Gres= disagreeing).
// MIG devices (dgxa100) are MultipleFiles= records.
func TestGresConfAgainstSlurmd(t *testing.T) {
	slurmcores.RequireSlurmdGres(t)
	t.Logf("slurmd of %s", oracleroot.Describe())
	cases := []struct {
		name, root, backend string
		gpus                int
		nodeNameLines       bool // every line NodeName=<node>, another node's lines after
	}{
		{"dgxh100", "dgxh100", "mock:dgxh100", 8, false},
		{"dgxh100-node-name-lines", "dgxh100", "mock:dgxh100", 8, true},
		{"dgxa100-mig", "dgxa100", "mock:dgxa100", 9, false}, // 7 whole GPUs, 2 MIG devices
		{"dgxb200", "dgxb200", "mock:dgxb200", 8, false},
		{"h200x2", "h200x2", "procfs", 2, false}, // captured from a real node
		{"h200x1", "h200x1", "procfs", 1, false},
		{"gh200", "gh200", "procfs", 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := testroot.Shared(t, tc.root)
			gres, nodeLine, res := generate(t, dir, tc.backend, tc.nodeNameLines)
			node := res.Node.NodeName
			if tc.nodeNameLines {
				gres += strings.ReplaceAll(gres, "NodeName="+node+" ", "NodeName=othernode ")
			}
			want, err := gresconf.Parse("generated", []byte(gres))
			if err != nil {
				t.Fatalf("generated gres.conf does not parse: %v\n%s", err, gres)
			}
			wantDevs := want.ForNode(node)
			if len(wantDevs) != tc.gpus {
				t.Fatalf("generated %d records, want %d:\n%s", len(wantDevs), tc.gpus, gres)
			}
			view, err := slurmcores.SlurmdGres(slurmcores.GresInput{Root: dir, NodeLine: nodeLine, GresConf: gres, SlurmdParameters: res.SlurmdParameter})
			if err != nil {
				t.Fatalf("%v\ngres.conf:\n%s\nnode line: %s", err, gres, nodeLine)
			}
			for _, m := range view.Messages {
				t.Errorf("slurmd: %s", m)
			}
			if len(view.GPUs) != len(wantDevs) {
				t.Fatalf("slurmd -G lists %d GPUs, gres.conf %d:\n%s", len(view.GPUs), len(wantDevs), view.Log)
			}
			byFile := map[string]slurmcores.Gres{}
			for _, g := range view.GPUs {
				byFile[g.File] = g
			}
			for _, w := range wantDevs {
				key := strings.Join(w.DeviceFiles(), ",")
				g, ok := byFile[key]
				if !ok {
					t.Errorf("slurmd -G has no record for %s:\n%s", key, view.Log)
					continue
				}
				if g.Name != "gpu" || g.Type != w.Type || g.Count != 1 {
					t.Errorf("%s: slurmd Name=%s Type=%s Count=%d, generated Name=gpu Type=%s Count=1", key, g.Name, g.Type, g.Count, w.Type)
				}
				if cores, err := cpuset.Parse(g.Cores); err != nil || !cores.Equal(w.Cores) {
					t.Errorf("%s: slurmd Cores=%s, generated %s", key, g.Cores, w.Cores)
				}
				if g.Links != textfmt.JoinInts(w.Links, ",") {
					t.Errorf("%s: slurmd Links=%q, generated %q", key, g.Links, textfmt.JoinInts(w.Links, ","))
				}
			}
			if t.Failed() {
				t.Logf("gres.conf:\n%s\nnode line: %s\nslurmd:\n%s", gres, nodeLine, view.Log)
			}
		})
	}
}

// generate is gpuprep-gres --root dir --gpu-backend backend, in process:
// its gres.conf (--node-name-lines with lines), its node line (--format
// slurm) and the plan.
func generate(t *testing.T, dir, backend string, lines bool) (string, string, *gresgen.Result) {
	t.Helper()
	root := host.NewRoot(dir)
	b, err := gpu.Open(backend, root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	node, err := topo.Discover(root, b, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := gresgen.OptionsFromConfig(nil, "", "")
	opt.NodeNameLines = lines
	if opt.Slurmd, err = gresgen.ReadSlurmdView(root, "", ""); err != nil {
		t.Fatal(err)
	}
	res, err := gresgen.Plan(node, opt)
	if err != nil {
		t.Fatal(err)
	}
	var gres, nodeLine bytes.Buffer
	if err := gresgen.WriteGres(&gres, node, res, "slurmd_gres_oracle_test"); err != nil {
		t.Fatal(err)
	}
	if err := gresgen.WriteNodeLine(&nodeLine, res); err != nil {
		t.Fatal(err)
	}
	return gres.String(), nodeLine.String(), res
}
