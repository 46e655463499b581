package gresgen_test

import (
	"bytes"
	"strings"
	"testing"

	"gpuprep/internal/oracleroot"
	"gpuprep/internal/slurmcores"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// TestMPSGresConfAgainstSlurmd holds the Name=mps records gpuprep-gres
// prints for GPUs [gres] mps_gpus marks against slurmd's reading
// (`slurmd -D -G` with GresTypes=gpu,mps, as TestGresConfAgainstSlurmd):
// slurmd gives the marked GPUs' files (GPUs 1 and 6, minors 3 and 4 on
// this fixture) the configured Count and every other GPU Count=0, with
// each GPU's type and cores copied from its Name=gpu record, and says
// nothing about gres.conf. (slurmd -G does not hold the node line's
// mps:<total> against the records, as tried with a wrong total on 22.05:
// slurmctld does, at registration; TestMPSRecords checks the sum.)
func TestMPSGresConfAgainstSlurmd(t *testing.T) {
	slurmcores.RequireSlurmdGres(t)
	t.Logf("slurmd of %s", oracleroot.Describe())
	dir := testroot.Shared(t, "dgxh100")
	root := host.NewRoot(dir)
	b, err := gpu.Open("mock:dgxh100", root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	node, err := topo.Discover(root, b, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := gresgen.OptionsFromConfig(nil, "", "")
	opt.MPSGPUs, opt.MPSCount = config.GPUSelection{"1", "6"}, 200
	if opt.Slurmd, err = gresgen.ReadSlurmdView(root, "", ""); err != nil {
		t.Fatal(err)
	}
	res, err := gresgen.Plan(node, opt)
	if err != nil {
		t.Fatal(err)
	}
	var gres, nodeLine bytes.Buffer
	if err := gresgen.WriteGres(&gres, node, res, "slurmd_mps_oracle_test"); err != nil {
		t.Fatal(err)
	}
	if err := gresgen.WriteNodeLine(&nodeLine, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(nodeLine.String(), ",mps:400\n") {
		t.Fatalf("node line %s: want mps:400", nodeLine.String())
	}
	view, err := slurmcores.SlurmdGres(slurmcores.GresInput{Root: dir, NodeLine: nodeLine.String(), GresConf: gres.String(),
		SlurmdParameters: res.SlurmdParameter, GresTypes: "gpu,mps"})
	if err != nil {
		t.Fatalf("%v\ngres.conf:\n%s\nnode line: %s", err, gres.String(), nodeLine.String())
	}
	for _, m := range view.Messages {
		t.Errorf("slurmd: %s", m)
	}
	gpus := map[string]slurmcores.Gres{}
	mps := map[string]slurmcores.Gres{}
	for _, g := range view.GPUs {
		switch g.Name {
		case "gpu":
			gpus[g.File] = g
		case "mps":
			mps[g.File] = g
		}
	}
	// slurmd gives every GPU a gres/mps record, Count=0 where gres.conf
	// has no Name=mps line for its file.
	if len(gpus) != 8 || len(mps) != 8 {
		t.Fatalf("slurmd -G lists %d gpu and %d mps records, want 8 of each:\n%s", len(gpus), len(mps), view.Log)
	}
	want := map[string]int{}
	for _, d := range res.MPS {
		want[d.File] = int(d.Count)
	}
	if len(want) != 2 || want["/dev/nvidia0"] != 0 {
		t.Fatalf("generated mps records %+v: want GPUs 1 and 6, not on /dev/nvidia0", res.MPS)
	}
	for file, g := range mps {
		parent := gpus[file]
		if g.Count != want[file] || g.Type != parent.Type || g.Cores != parent.Cores {
			t.Errorf("slurmd: %s\nwant Count=%d Type=%s Cores=%s (its gpu record's)", g.Line, want[file], parent.Type, parent.Cores)
		}
	}
	if t.Failed() {
		t.Logf("gres.conf:\n%s\nnode line: %s\nslurmd:\n%s", gres.String(), nodeLine.String(), view.Log)
	}
}
