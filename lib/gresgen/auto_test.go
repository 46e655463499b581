package gresgen

import (
	"bytes"
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

// nps2Node is twoSocketNode with two NUMA nodes per socket (AMD NPS2, Intel
// SNC2), one L3 per NUMA node and one GPU local to each of NUMA nodes 0 and 1.
func nps2Node() *topo.Node {
	node := twoSocketNode(mkGPU(0, 0, "0000:01:00.0", 0, "0-1", nil), mkGPU(1, 1, "0000:02:00.0", 1, "2-3", nil))
	node.NUMA = []topo.NUMANode{
		{ID: 0, CPUs: cpuset.MustParse("0-1,8-9")}, {ID: 1, CPUs: cpuset.MustParse("2-3,10-11")},
		{ID: 2, CPUs: cpuset.MustParse("4-5,12-13")}, {ID: 3, CPUs: cpuset.MustParse("6-7,14-15")},
	}
	return node
}

// TestPlanSocketsFollowSlurmd: by default ([gres] numa_as_socket = "auto")
// the node line counts sockets as slurmd will under the SlurmdParameters of
// the slurm.conf read, and says which file decided it; with no slurm.conf,
// real sockets (what slurmd -C and slurmd without the parameter count), and
// the GPUs' split sockets get a warning naming that and the fix.
func TestPlanSocketsFollowSlurmd(t *testing.T) {
	slurmd := func(conf string) *SlurmdView {
		v, err := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": conf}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name        string
		slurmd      *SlurmdView
		sockets     int
		note        string
		warn        string // in the one warning's text, "" for no warning
		needs       bool   // "# needs SlurmdParameters=..." above the line
		slurmdParam string
	}{
		{"no slurm.conf", &SlurmdView{Sockets: SocketsReal}, 2,
			"Sockets=2 counts real sockets, as slurmd will: no slurm.conf found",
			"the node line counts real sockets, as slurmd will: no slurm.conf found", false, ""},
		{"without the parameter", slurmd("ClusterName=c\nSlurmdParameters=config_overrides\n"), 2,
			"/etc/slurm/slurm.conf:2 sets SlurmdParameters=config_overrides, without numa_node_as_socket",
			"fix: set SlurmdParameters=config_overrides,numa_node_as_socket at /etc/slurm/slurm.conf:2, restart slurmd", false, ""},
		{"numa_node_as_socket", slurmd("SlurmdParameters=numa_node_as_socket\n"), 4,
			"Sockets=4 counts NUMA nodes, as slurmd will: /etc/slurm/slurm.conf:1 sets SlurmdParameters=numa_node_as_socket", "", false, "numa_node_as_socket"},
		{"l3cache_as_socket wins", slurmd("SlurmdParameters=numa_node_as_socket,l3cache_as_socket\n"), 8,
			"Sockets=8 counts L3 caches, as slurmd will", "", false, "l3cache_as_socket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := nps2Node()
			// One L3 per core (both its threads): 8 L3 caches.
			for c := 0; c < 8; c++ {
				node.L3Caches = append(node.L3Caches, cpuset.New(c, c+8))
			}
			res, err := Plan(node, Options{Slurmd: tc.slurmd})
			if err != nil {
				t.Fatal(err)
			}
			if res.Node.Sockets != tc.sockets || res.Node.CoresPerSocket != 8/tc.sockets {
				t.Errorf("node line %s, want Sockets=%d", res.Node, tc.sockets)
			}
			if !strings.Contains(res.SocketsNote, tc.note) {
				t.Errorf("note %q, want %q in it", res.SocketsNote, tc.note)
			}
			var ws []string
			for _, w := range res.Warnings {
				ws = append(ws, w.String())
			}
			if (tc.warn == "") != (len(ws) == 0) || (tc.warn != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.warn))) {
				t.Errorf("warnings %q, want one with %q", ws, tc.warn)
			}
			if res.SlurmdParameter != tc.slurmdParam {
				t.Errorf("SlurmdParameter %q, want %q", res.SlurmdParameter, tc.slurmdParam)
			}
			var b bytes.Buffer
			WriteNodeLine(&b, res)
			if strings.Contains(b.String(), "# needs") != tc.needs || !strings.Contains(b.String(), "# "+res.SocketsNote+"\n") {
				t.Errorf("node line output:\n%s", b.String())
			}
		})
	}
}

// TestPlanExplicitSocketsWin: numa_as_socket = true or false (or
// --numa-as-socket) chooses the node line's sockets whatever slurm.conf
// says, and warns where slurmd will register other counts.
func TestPlanExplicitSocketsWin(t *testing.T) {
	noParam, err := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\n"}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	res, _ := Plan(nps2Node(), Options{Sockets: SocketsNUMA, SocketsBy: "--numa-as-socket", Slurmd: noParam})
	var b bytes.Buffer
	WriteNodeLine(&b, res)
	if res.Node.Sockets != 4 || !res.NeedsNUMAAsSocket || res.SlurmConfAgrees ||
		!strings.HasPrefix(b.String(), "# needs SlurmdParameters=numa_node_as_socket in slurm.conf\n") ||
		len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Msg, "slurmd will register Sockets=2: /etc/slurm/slurm.conf sets no SlurmdParameters") {
		t.Errorf("--numa-as-socket against slurm.conf without it: %s, warnings %v\n%s", res.Node, res.Warnings, b.String())
	}

	withParam, err := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": "SlurmdParameters=numa_node_as_socket\n"}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	res, _ = Plan(nps2Node(), Options{Sockets: SocketsReal, SocketsBy: "[gres] numa_as_socket = false", Slurmd: withParam})
	var msgs []string
	for _, w := range res.Warnings {
		msgs = append(msgs, w.String())
	}
	all := strings.Join(msgs, "\n")
	if res.Node.Sockets != 2 || res.NeedsNUMAAsSocket ||
		!strings.Contains(all, "slurmd will register Sockets=4") ||
		!strings.Contains(all, "GPU affinity does not follow socket boundaries") {
		t.Errorf("numa_as_socket = false against numa_node_as_socket: %s, warnings %q", res.Node, msgs)
	}
	res, _ = Plan(nps2Node(), Options{Sockets: SocketsNUMA, SocketsBy: "--numa-as-socket", Slurmd: withParam})
	if res.Node.Sockets != 4 || !res.SlurmConfAgrees || len(res.Warnings) != 0 {
		t.Errorf("--numa-as-socket with numa_node_as_socket: %s, warnings %v", res.Node, res.Warnings)
	}
}

// TestSocketSetsNUMAAsSlurmdCounts: under numa_node_as_socket slurmd counts
// the objects hwloc hangs the first NUMA node from: packages where NUMA
// nodes are sockets, the whole machine (one socket) where one NUMA node
// spans the sockets, L3 caches where a NUMA node is one L3.
func TestSocketSetsNUMAAsSlurmdCounts(t *testing.T) {
	node := twoSocketNode()
	if n := len(socketSets(node, SocketsNUMA)); n != 2 {
		t.Errorf("NUMA nodes = sockets: %d sockets, want 2", n)
	}
	node.NUMA = []topo.NUMANode{{ID: 0, CPUs: cpuset.MustParse("0-15")}}
	if n := len(socketSets(node, SocketsNUMA)); n != 1 {
		t.Errorf("one NUMA node over both sockets: %d sockets, want 1 (hwloc's Machine)", n)
	}
	node = nps2Node()
	node.L3Caches = []cpuset.Set{cpuset.MustParse("0-1,8-9"), cpuset.MustParse("2-7,10-15")}
	if n := len(socketSets(node, SocketsNUMA)); n != 2 {
		t.Errorf("first NUMA node is one L3: %d sockets, want the 2 L3 caches", n)
	}
	node.L3Caches = nil
	if n := len(socketSets(node, SocketsNUMA)); n != 4 {
		t.Errorf("NPS2: %d sockets, want the 4 NUMA nodes", n)
	}
	if n := len(socketSets(node, SocketsL3)); n != 1 {
		t.Errorf("l3cache_as_socket without L3 caches: %d sockets, want 1 (slurmd's fudge)", n)
	}
}

func TestOptionsFromConfigNUMAAsSocket(t *testing.T) {
	cfg := func(v config.Tristate) *config.Config {
		c := config.Default()
		c.Gres.NUMAAsSocket = v
		return c
	}
	for _, tc := range []struct {
		cfg     *config.Config
		flag    config.Tristate
		sockets SocketView
		by      string
	}{
		{config.Default(), "", "", ""}, // the built-in default is auto: follow slurmd
		{nil, "", "", ""},
		{cfg(config.True), "", SocketsNUMA, "[gres] numa_as_socket = true"},
		{cfg(config.False), "", SocketsReal, "[gres] numa_as_socket = false"},
		{cfg(config.True), config.False, SocketsReal, "--numa-as-socket=false"}, // the flag wins both ways
		{cfg(config.False), config.True, SocketsNUMA, "--numa-as-socket"},
		{config.Default(), config.False, SocketsReal, "--numa-as-socket=false"},
	} {
		opt := OptionsFromConfig(tc.cfg, tc.flag, "")
		if opt.Sockets != tc.sockets || opt.SocketsBy != tc.by {
			t.Errorf("flag %q: got %q by %q, want %q by %q", tc.flag, opt.Sockets, opt.SocketsBy, tc.sockets, tc.by)
		}
	}
}

// TestPlanSaysWhyRealSocketsWhereNUMASplits: where NUMA nodes split the
// sockets and slurm.conf lacks numa_node_as_socket, the output says the
// line counts real sockets because of that file, and how to get NUMA
// nodes, even when no GPU's cores cross a socket (a node without GPUs).
func TestPlanSaysWhyRealSocketsWhereNUMASplits(t *testing.T) {
	v, err := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\n"}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	node := nps2Node()
	node.GPUs = nil
	res, _ := Plan(node, Options{Slurmd: v})
	if len(res.Warnings) != 1 || res.Node.Sockets != 2 ||
		res.Warnings[0].String() != "the 4 NUMA nodes split the 2 sockets; the node line counts real sockets, as slurmd will: /etc/slurm/slurm.conf sets no SlurmdParameters; "+
			"fix: set SlurmdParameters=numa_node_as_socket in /etc/slurm/slurm.conf, restart slurmd and run gpuprep-gres again" {
		t.Errorf("%s, warnings %q", res.Node, res.Warnings)
	}
	// An explicit numa_as_socket = false is the admin's choice: no warning.
	res, _ = Plan(node, Options{Sockets: SocketsReal, SocketsBy: "--numa-as-socket=false", Slurmd: v})
	if len(res.Warnings) != 0 {
		t.Errorf("--numa-as-socket=false: warnings %v", res.Warnings)
	}
}
