package nccl

import (
	"strings"
	"testing"

	"gpuprep/lib/srunconf"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// planMap runs Plan and indexes the result; it also checks the order.
func planMap(t *testing.T, in Input) map[string]Var {
	t.Helper()
	vars := Plan(in)
	out := map[string]Var{}
	for i, v := range vars {
		if i > 0 && vars[i-1].Name >= v.Name {
			t.Errorf("not sorted by name: %s before %s", vars[i-1].Name, v.Name)
		}
		out[v.Name] = v
	}
	return out
}

func TestPlanFabricMatching(t *testing.T) {
	fabrics := []srunconf.NCCLFabric{
		{Name: "all", IBHCA: "auto", Env: map[string]string{"A": "all"}},
		{Name: "nodes", Nodes: "gpu[001-004,010]", IBHCA: "auto", Env: map[string]string{"NODES": "1"}},
		{Name: "part", Partitions: []string{"train", "debug"}, IBHCA: "auto", Env: map[string]string{"PART": "1"}},
		{Name: "dgx", Products: []string{"DGXH100", "*H200*"}, IBHCA: "auto", Env: map[string]string{"PROD": "1"}},
		{Name: "both", Nodes: "gpu001", Partitions: []string{"train"}, IBHCA: "auto", Env: map[string]string{"BOTH": "1"}},
	}
	for _, tc := range []struct {
		name, node, part, prod string
		want                   []string // variables set besides A
	}{
		{"none", "login1", "cpu", "PowerEdge R760", nil},
		{"hostlist", "gpu003", "cpu", "", []string{"NODES"}},
		{"hostlist padding", "gpu3", "cpu", "", nil},
		{"hostlist single", "gpu010", "", "", []string{"NODES"}},
		{"partition", "x", "debug", "", []string{"PART"}},
		{"product exact", "x", "", "DGXH100", []string{"PROD"}},
		{"product pattern", "x", "", "ThinkSystem SR675 V3 H200 NVL", []string{"PROD"}},
		{"product case", "x", "", "dgxh100", nil},
		{"all selectors must match", "gpu001", "debug", "", []string{"NODES", "PART"}},
		{"all selectors", "gpu001", "train", "DGXH100", []string{"BOTH", "NODES", "PART", "PROD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planMap(t, Input{Fabrics: fabrics, Node: tc.node, Partition: tc.part, Product: tc.prod})
			if got["A"].Value != "all" || got["A"].From != "fabric all" {
				t.Errorf("A = %+v, want the selector-less fabric everywhere", got["A"])
			}
			for _, k := range []string{"NODES", "PART", "PROD", "BOTH"} {
				_, set := got[k]
				if set != strings.Contains(strings.Join(tc.want, ","), k) {
					t.Errorf("%s set = %v, want %v (plan %v)", k, set, !set, got)
				}
			}
		})
	}
}

func TestPlanOverrideUserForce(t *testing.T) {
	fabrics := []srunconf.NCCLFabric{
		{Name: "base", IBHCA: "auto", Env: map[string]string{"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_QPS_PER_CONNECTION": "1", "NCCL_TOPO_FILE": "/etc/nccl/topo.xml"},
			Force: []string{"NCCL_TOPO_FILE"}},
		{Name: "ndr", Partitions: []string{"big"}, IBHCA: "auto", Env: map[string]string{"NCCL_IB_QPS_PER_CONNECTION": "2", "NCCL_SOCKET_IFNAME": "=bond0"},
			Force: []string{"NCCL_SOCKET_IFNAME"}},
	}
	for _, tc := range []struct {
		name, part string
		user       map[string]string
		want       map[string]Var // Name filled in from the key
	}{
		{"base only", "small", nil, map[string]Var{
			"NCCL_SOCKET_IFNAME":         {Value: "=eth0", From: "fabric base"},
			"NCCL_IB_QPS_PER_CONNECTION": {Value: "1", From: "fabric base"},
			"NCCL_TOPO_FILE":             {Value: "/etc/nccl/topo.xml", From: "fabric base"},
		}},
		{"later overrides", "big", nil, map[string]Var{
			"NCCL_SOCKET_IFNAME":         {Value: "=bond0", From: "fabric ndr"},
			"NCCL_IB_QPS_PER_CONNECTION": {Value: "2", From: "fabric ndr"},
			"NCCL_TOPO_FILE":             {Value: "/etc/nccl/topo.xml", From: "fabric base"},
		}},
		{"user wins, force wins over user", "big", map[string]string{"NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_SOCKET_IFNAME": "ib0", "NCCL_TOPO_FILE": "/home/me/t.xml"}, map[string]Var{
			"NCCL_IB_QPS_PER_CONNECTION": {Value: "4", From: "your environment", User: "4", Kept: true},
			"NCCL_SOCKET_IFNAME":         {Value: "=bond0", From: "forced by fabric ndr over your NCCL_SOCKET_IFNAME=ib0", User: "ib0"},
			"NCCL_TOPO_FILE":             {Value: "/etc/nccl/topo.xml", From: "forced by fabric base over your NCCL_TOPO_FILE=/home/me/t.xml", User: "/home/me/t.xml"},
		}},
		{"force is per fabric: a later unforced fabric lets the user win", "small", map[string]string{"NCCL_SOCKET_IFNAME": "ib0"}, map[string]Var{
			"NCCL_SOCKET_IFNAME":         {Value: "ib0", From: "your environment", User: "ib0", Kept: true},
			"NCCL_IB_QPS_PER_CONNECTION": {Value: "1", From: "fabric base"},
			"NCCL_TOPO_FILE":             {Value: "/etc/nccl/topo.xml", From: "fabric base"},
		}},
		{"user's value equal to the fabric's", "small", map[string]string{"NCCL_IB_QPS_PER_CONNECTION": "1"}, map[string]Var{
			"NCCL_SOCKET_IFNAME":         {Value: "=eth0", From: "fabric base"},
			"NCCL_IB_QPS_PER_CONNECTION": {Value: "1", From: "your environment (fabric base sets the same)", User: "1", Kept: true},
			"NCCL_TOPO_FILE":             {Value: "/etc/nccl/topo.xml", From: "fabric base"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planMap(t, Input{Fabrics: fabrics, Partition: tc.part, Getenv: envMap(tc.user)})
			if len(got) != len(tc.want) {
				t.Errorf("got %d variables, want %d: %+v", len(got), len(tc.want), got)
			}
			for name, w := range tc.want {
				w.Name = name
				if got[name] != w {
					t.Errorf("%s:\n got %+v\nwant %+v", name, got[name], w)
				}
			}
		})
	}
}

func TestPlanIBHCA(t *testing.T) {
	hcas := []string{"mlx5_0:1", "mlx5_1:1"}
	const from = "nearest HCAs to GPU 3 (same PCIe switch)"
	fab := func(name, ibhca string, force ...string) srunconf.NCCLFabric {
		return srunconf.NCCLFabric{Name: name, IBHCA: ibhca, Force: force}
	}
	other := srunconf.NCCLFabric{Name: "elsewhere", Nodes: "gpu[100-200]", IBHCA: "=mlx5_9"}
	for _, tc := range []struct {
		name    string
		fabrics []srunconf.NCCLFabric
		hcas    []string
		user    string
		want    Var // NCCL_IB_HCA; zero: not set
	}{
		{"no fabric: auto", nil, hcas, "", Var{Value: "=mlx5_0:1,mlx5_1:1", From: from}},
		{"no matching fabric: auto", []srunconf.NCCLFabric{other}, hcas, "", Var{Value: "=mlx5_0:1,mlx5_1:1", From: from}},
		{"no fabric, no HCAs: unset", nil, nil, "", Var{}},
		{"auto", []srunconf.NCCLFabric{fab("f", "auto")}, hcas[:1], "", Var{Value: "=mlx5_0:1", From: from}},
		{"empty ib_hca is auto", []srunconf.NCCLFabric{fab("f", "")}, hcas[:1], "", Var{Value: "=mlx5_0:1", From: from}},
		{"off", []srunconf.NCCLFabric{fab("f", "off")}, hcas, "", Var{}},
		{"literal as written", []srunconf.NCCLFabric{fab("f", "mlx5_2,mlx5_3")}, hcas, "", Var{Value: "mlx5_2,mlx5_3", From: "fabric f (ib_hca)"}},
		{"later off unsets an earlier literal", []srunconf.NCCLFabric{fab("a", "=mlx5_4"), fab("b", "off")}, hcas, "", Var{}},
		{"later literal over auto", []srunconf.NCCLFabric{fab("a", "auto"), fab("b", "^mlx5_9")}, hcas, "", Var{Value: "^mlx5_9", From: "fabric b (ib_hca)"}},
		{"user wins over auto", nil, hcas, "mlx5_5", Var{Value: "mlx5_5", From: "your environment", User: "mlx5_5", Kept: true}},
		{"user wins over off: nothing set", []srunconf.NCCLFabric{fab("f", "off")}, hcas, "mlx5_5", Var{}},
		{"forced auto over user", []srunconf.NCCLFabric{fab("f", "auto", "NCCL_IB_HCA")}, hcas, "mlx5_5",
			Var{Value: "=mlx5_0:1,mlx5_1:1", From: "forced by fabric f over your NCCL_IB_HCA=mlx5_5: " + from, User: "mlx5_5"}},
		{"forced literal over user", []srunconf.NCCLFabric{fab("f", "=mlx5_2", "NCCL_IB_HCA")}, hcas, "mlx5_5",
			Var{Value: "=mlx5_2", From: "forced by fabric f over your NCCL_IB_HCA=mlx5_5", User: "mlx5_5"}},
		{"unnamed fabric", []srunconf.NCCLFabric{other, {IBHCA: "=mlx5_7", Force: []string{"NCCL_IB_HCA"}}}, hcas, "x",
			Var{Value: "=mlx5_7", From: "forced by fabric #2 over your NCCL_IB_HCA=x", User: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planMap(t, Input{Fabrics: tc.fabrics, Node: "gpu001", HCAs: tc.hcas, HCAFrom: from,
				Getenv: envMap(map[string]string{"NCCL_IB_HCA": tc.user})})
			v, ok := got["NCCL_IB_HCA"]
			if tc.want == (Var{}) {
				if ok {
					t.Errorf("NCCL_IB_HCA set: %+v", v)
				}
				return
			}
			tc.want.Name = "NCCL_IB_HCA"
			if v != tc.want {
				t.Errorf("\n got %+v\nwant %+v", v, tc.want)
			}
		})
	}
}

func TestPlanHCAFromDefault(t *testing.T) {
	v := Plan(Input{HCAs: []string{"mlx5_0:1"}})
	if len(v) != 1 || v[0].From == "" {
		t.Errorf("no HCAFrom: %+v, want a From all the same", v)
	}
}
