package gresgen

import (
	"bytes"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// CpuSpecList from the default profile's housekeeping_cpus, in Slurm's
// abstract CPU ids: on dgxh100 (2 sockets x 56 cores x 2 threads, split
// numbering) the first core of each NUMA node is OS CPUs 0,112 (Slurm core
// 0) and 56,168 (Slurm core 56): abstract ids 0,1 and 112,113.
func TestCpuSpecList(t *testing.T) {
	node, err := topo.Discover(host.NewRoot(testroot.Shared(t, "dgxh100")), nil, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("g.toml", []byte("[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	opt := OptionsFromConfig(cfg, "", "n1")
	if opt.Housekeeping != "cores_per_numa:1" {
		t.Fatalf("Housekeeping = %q", opt.Housekeeping)
	}
	res, err := Plan(node, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Node.String(); !strings.HasSuffix(got, " CpuSpecList=0,1,112,113") {
		t.Errorf("node line %q", got)
	}
	if got := res.Node.HousekeepingCPUs.String(); got != "0,56,112,168" {
		t.Errorf("OS CPUs %s", got)
	}
	var b bytes.Buffer
	if err := WriteNodeLine(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "# CpuSpecList: OS CPUs 0,56,112,168") {
		t.Errorf("output:\n%s", b.String())
	}
	// An explicit list of single threads widens to whole cores, as Slurm does.
	opt.Housekeeping = "0-1"
	res, _ = Plan(node, opt)
	if got := formatSpecList(res.Node.CpuSpecList); got != "0,1,2,3" {
		t.Errorf("0-1: CpuSpecList=%s", got)
	}
	// CPUs the node lacks: a warning, no CpuSpecList.
	opt.Housekeeping = "500"
	res, _ = Plan(node, opt)
	if !res.Node.CpuSpecList.IsEmpty() || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[len(res.Warnings)-1].Msg, "CpuSpecList= left out") {
		t.Errorf("500: %v %v", res.Node.CpuSpecList, res.Warnings)
	}
	// Without housekeeping_cpus: no CpuSpecList.
	res, _ = Plan(node, OptionsFromConfig(config.Default(), "", "n1"))
	if strings.Contains(res.Node.String(), "CpuSpecList") {
		t.Errorf("default config: %s", res.Node.String())
	}
}
