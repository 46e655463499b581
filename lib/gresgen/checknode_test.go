package gresgen

import (
	"strings"
	"testing"

	"gpuprep/lib/gresconf"
)

// TestCheckNodeLineAgainstSlurmd: --check also holds slurm.conf's NodeName=
// line for this node (NodeName=DEFAULT values included) against what slurmd
// will register, sockets counted as its SlurmdParameters say: a line written
// with NUMA nodes as sockets is wrong where slurm.conf lacks
// numa_node_as_socket, and right where it has it.
func TestCheckNodeLineAgainstSlurmd(t *testing.T) {
	numaLine := "NodeName=DEFAULT ThreadsPerCore=2\nNodeName=n[1-4] CPUs=16 Sockets=4 CoresPerSocket=2 Gres=gpu:2\n"
	realLine := "NodeName=n1 CPUs=16 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=2\n"
	cases := []struct {
		name, conf string
		want       []string // in the one difference; none when nil
	}{
		{"NUMA line, no parameter", "ClusterName=c\n" + numaLine,
			[]string{"/etc/slurm/slurm.conf:3: NodeName=n1 has Sockets=4 CoresPerSocket=2, but slurmd will register Sockets=2 CoresPerSocket=4",
				"it counts real sockets: /etc/slurm/slurm.conf sets no SlurmdParameters"}},
		{"NUMA line with numa_node_as_socket", "SlurmdParameters=numa_node_as_socket\n" + numaLine, nil},
		{"real line", realLine, nil},
		{"real line with numa_node_as_socket", "SlurmdParameters=numa_node_as_socket\n" + realLine,
			[]string{"SocketsPerBoard=2 CoresPerSocket=4, but slurmd will register SocketsPerBoard=4 CoresPerSocket=2 (it counts NUMA nodes"}},
		{"DEFAULT threads", "NodeName=DEFAULT ThreadsPerCore=1\nNodeName=n1 Sockets=2\n",
			[]string{"/etc/slurm/slurm.conf:2: NodeName=n1 has ThreadsPerCore=1, but slurmd will register ThreadsPerCore=2"}},
		{"other nodes only", "NodeName=m[1-4] Sockets=8\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": tc.conf}), "", "")
			if err != nil || v.Problem != "" {
				t.Fatal(err, v.Problem)
			}
			node := nps2Node()
			opt := Options{Slurmd: v}
			res, _ := Plan(node, opt)
			var b strings.Builder
			WriteGres(&b, node, res, "test")
			gres, err := gresconf.Parse("gres.conf", []byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			diffs := Check(node, res, gres, opt)
			if tc.want == nil {
				if len(diffs) != 0 {
					t.Errorf("differences %v", diffs)
				}
				return
			}
			if len(diffs) != 1 {
				t.Fatalf("want one difference, got %v", diffs)
			}
			for _, w := range tc.want {
				if !strings.Contains(diffs[0].String(), w) {
					t.Errorf("%q lacks %q", diffs[0], w)
				}
			}
		})
	}
	// An explicit choice does not change what slurmd registers.
	v, _ := ReadSlurmdView(confRoot(t, map[string]string{"/etc/slurm/slurm.conf": numaLine}), "", "")
	opt := Options{Sockets: SocketsNUMA, SocketsBy: "--numa-as-socket", Slurmd: v}
	res, _ := Plan(nps2Node(), opt)
	if diffs := checkNodeLine(res, opt); len(diffs) != 1 || !strings.Contains(diffs[0].Msg, "slurmd will register Sockets=2") {
		t.Errorf("--numa-as-socket: %v", diffs)
	}
}
