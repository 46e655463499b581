package slurm

import "testing"

// TestConfNode: the NodeName= line naming a node, through host lists, with
// the NodeName=DEFAULT values before it (not after it), from included files.
func TestConfNode(t *testing.T) {
	r := writeTree(t, map[string]string{
		"/etc/slurm/slurm.conf": `NodeName=DEFAULT ThreadsPerCore=2 RealMemory=1000
NodeName=cpu[01-10] Sockets=1
Include nodes.conf
NodeName=DEFAULT ThreadsPerCore=4
NodeName=late01 Sockets=8
`,
		"/etc/slurm/nodes.conf": "NodeName=gpu[01-04],gpu99 Sockets=2 CoresPerSocket=64 RealMemory=2000\n",
	})
	c, err := ReadConf(r, DefaultConfFile)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := c.Node("gpu03")
	if !ok || n.Where != "/etc/slurm/nodes.conf:1" {
		t.Fatalf("gpu03: %+v, %v", n, ok)
	}
	for k, want := range map[string]string{"sockets": "2", "CoresPerSocket": "64", "ThreadsPerCore": "2", "RealMemory": "2000"} {
		if v, ok := n.Get(k); !ok || v != want {
			t.Errorf("gpu03 %s: %q, %v; want %q", k, v, ok, want)
		}
	}
	if n, _ := c.Node("late01"); n.values["threadspercore"] != "4" {
		t.Errorf("late01: the DEFAULT line before it sets ThreadsPerCore=4: %+v", n)
	}
	for _, name := range []string{"gpu05", "gpu1", "DEFAULT"} {
		if _, ok := c.Node(name); ok {
			t.Errorf("%s: found a line", name)
		}
	}
}
