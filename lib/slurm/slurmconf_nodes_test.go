package slurm

import (
	"os"
	"strings"
	"testing"
)

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

// TestNodeNameFor: the NodeName slurmd takes on a host, through
// NodeHostname= lists, the host's full and short names; none where no
// line names the host.
func TestNodeNameFor(t *testing.T) {
	r := writeTree(t, map[string]string{
		"/etc/slurm/slurm.conf": `NodeName=DEFAULT NodeHostname=ignored
NodeName=gpu[01-03] NodeHostname=rack4-u[10-12] Sockets=2
NodeName=login1
NodeName=bad[01-02] NodeHostname=one
`,
	})
	c, err := ReadConf(r, DefaultConfFile)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{
		"rack4-u11": "gpu02", "rack4-u12.cluster.example": "gpu03",
		"login1": "login1", "login1.example": "login1",
		"gpu01": "", "one": "", "rack4-u13": "", "": "",
	} {
		if got := c.NodeNameFor(host); got != want {
			t.Errorf("%q: %q, want %q", host, got, want)
		}
	}
	var none *Conf
	if got := none.NodeNameFor("login1"); got != "" {
		t.Errorf("no slurm.conf: %q", got)
	}
}

// TestNodeName: --node, then SLURMD_NODENAME, then slurm.conf's line for
// this host, then the short host name.
func TestNodeName(t *testing.T) {
	h, _ := os.Hostname()
	short, _, _ := strings.Cut(h, ".")
	r := writeTree(t, map[string]string{"/etc/slurm/slurm.conf": "NodeName=n17 NodeHostname=" + short + "\n"})
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := NodeName(r, "", getenv); got != "n17" {
		t.Errorf("slurm.conf: %q, want n17", got)
	}
	env["SLURMD_NODENAME"] = "from-slurmd"
	if got := NodeName(r, "", getenv); got != "from-slurmd" {
		t.Errorf("SLURMD_NODENAME: %q", got)
	}
	if got := NodeName(r, "flag", getenv); got != "flag" {
		t.Errorf("--node: %q", got)
	}
	if got := NodeName(writeTree(t, nil), "", func(string) string { return "" }); got != short {
		t.Errorf("no slurm.conf: %q, want %q", got, short)
	}
}
