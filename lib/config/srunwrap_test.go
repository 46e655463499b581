package config

import (
	"reflect"
	"strings"
	"testing"

	"gpuprep/lib/srunconf"
)

func TestSrunwrapDefaults(t *testing.T) {
	s := Default().Srunwrap
	if s.GPU != srunconf.GPUNarrow || s.CPUBinding != srunconf.CPUKeep || s.Memory != srunconf.MemBind || s.GPUMemoryNodes {
		t.Errorf("defaults: %+v", s)
	}
	for _, c := range srunconf.SrunwrapChecks {
		if got := s.SrunwrapCheck(c); got != srunconf.CheckWarn {
			t.Errorf("default %s = %q, want warn", c, got)
		}
	}
	if n := len(Default().NCCL.Fabrics); n != 0 {
		t.Errorf("%d built-in fabrics, want none", n)
	}
	// srunwrap without a node description uses srunconf.Defaults: the
	// same as defaults.toml.
	if !reflect.DeepEqual(s, srunconf.Defaults()) {
		t.Errorf("defaults.toml [srunwrap] %+v, srunconf.Defaults() %+v", s, srunconf.Defaults())
	}
}

func TestSrunwrapParse(t *testing.T) {
	c, err := Parse("t.toml", []byte(`
[srunwrap]
gpu = "keep"
memory = "preferred"
[srunwrap.checks]
memlock = "refuse"
nccl_env = "off"

[[nccl.fabric]]
name = "ib-ndr"
nodes = "gpu[001-064]"
products = ["DGXH100", "*H200*"]
env = { NCCL_IB_QPS_PER_CONNECTION = "2", NCCL_SOCKET_IFNAME = "=bond0" }
force = ["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"]

[[nccl.fabric]]
partitions = ["debug"]
ib_hca = "off"
`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Srunwrap
	if s.GPU != srunconf.GPUKeep || s.Memory != srunconf.MemPreferred || s.CPUBinding != srunconf.CPUKeep {
		t.Errorf("srunwrap: %+v", s)
	}
	if s.SrunwrapCheck("memlock") != srunconf.CheckRefuse || s.SrunwrapCheck("nccl_env") != srunconf.CheckOff || s.SrunwrapCheck("nccl_hca") != srunconf.CheckWarn {
		t.Errorf("checks: %v", s.Checks)
	}
	fs := c.NCCL.Fabrics
	if len(fs) != 2 {
		t.Fatalf("fabrics: %+v", fs)
	}
	if fs[0].IBHCA != "auto" || fs[1].IBHCA != "off" {
		t.Errorf("ib_hca: %q, %q; want the default auto, then off", fs[0].IBHCA, fs[1].IBHCA)
	}
	if fs[0].Env["NCCL_SOCKET_IFNAME"] != "=bond0" || len(fs[0].Force) != 2 {
		t.Errorf("fabric 0: %+v", fs[0])
	}
}

func TestNCCLFabricMatches(t *testing.T) {
	f := srunconf.NCCLFabric{Nodes: "gpu[001-004],dgx7", Partitions: []string{"a", "b"}, Products: []string{"DGX*", "ProLiant XL675d Gen10 Plus"}}
	for _, tc := range []struct {
		node, part, prod string
		want             bool
	}{
		{"gpu002", "a", "DGXH100", true},
		{"dgx7", "b", "ProLiant XL675d Gen10 Plus", true},
		{"gpu005", "a", "DGXH100", false},
		{"gpu02", "a", "DGXH100", false},
		{"gpu002", "c", "DGXH100", false},
		{"gpu002", "", "DGXH100", false},
		{"gpu002", "a", "PowerEdge XE9680", false},
		{"gpu002", "a", "", false},
	} {
		if got := f.Matches(tc.node, tc.part, tc.prod); got != tc.want {
			t.Errorf("Matches(%q, %q, %q) = %v, want %v", tc.node, tc.part, tc.prod, got, tc.want)
		}
	}
	if !(srunconf.NCCLFabric{}).Matches("anything", "", "") {
		t.Error("a fabric without selectors must match everywhere")
	}
	if (srunconf.NCCLFabric{Nodes: "gpu[1-"}).Matches("gpu1", "", "") {
		t.Error("a bad hostlist must match nothing")
	}
}

func TestSrunwrapValidation(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"[srunwrap]\ngpu = \"all\"\n", `srunwrap.gpu = "all": must be one of narrow, keep, off`},
		{"[srunwrap]\ncpu_binding = \"bind\"\n", `srunwrap.cpu_binding`},
		{"[srunwrap]\nmemory = \"interleave\"\n", `srunwrap.memory`},
		{"[srunwrap.checks]\nmemlok = \"warn\"\n", `srunwrap.checks.memlok: no such check`},
		{"[srunwrap.checks]\nmemlock = \"fatal\"\n", `srunwrap.checks.memlock = "fatal": must be one of warn, refuse, off`},
		{"[[nccl.fabric]]\nname = \"x\"\nnodes = \"gpu[1-\"\n", `nccl.fabric.x.nodes: not a hostlist expression`},
		{"[[nccl.fabric]]\nproducts = [\"DGX[\"]\n", `products: "DGX[" is not a pattern`},
		{"[[nccl.fabric]]\nenv = { \"NCCL X\" = \"1\" }\n", `is not an environment variable name`},
		{"[[nccl.fabric]]\nenv = { NCCL_X = \"a\\nb\" }\n", `NCCL_X holds a NUL or newline`},
		{"[[nccl.fabric]]\nib_hca = \"=mlx5_0\\nexport X=1\"\n", `ib_hca: holds a NUL or newline`},
		{"[[nccl.fabric]]\nenv = { NCCL_IB_HCA = \"=mlx5_0\" }\n", `set NCCL_IB_HCA with ib_hca`},
		{"[[nccl.fabric]]\nenv = { A = \"1\" }\nforce = [\"B\"]\n", `"B" is not set in this fabric's env`},
	} {
		_, err := Parse("t.toml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}
