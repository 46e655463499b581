package slurm

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// writeTree is a fixture root of the given node files.
func writeTree(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	return host.NewRoot(testroot.Files(t, files))
}

func TestLocateConfOrder(t *testing.T) {
	both := writeTree(t, map[string]string{DefaultConfFile: "", ConfiglessConfFile: ""})
	if f, err := LocateConf(both, "/srv/slurm/slurm.conf"); err != nil || f != "/srv/slurm/slurm.conf" {
		t.Errorf("SLURM_CONF set: got %q, %v; want the file it names", f, err)
	}
	if f, err := LocateConf(both, ""); err != nil || f != DefaultConfFile {
		t.Errorf("both present: got %q, %v; want %s first", f, err, DefaultConfFile)
	}
	configless := writeTree(t, map[string]string{ConfiglessConfFile: ""})
	if f, err := LocateConf(configless, ""); err != nil || f != ConfiglessConfFile {
		t.Errorf("configless node: got %q, %v; want %s", f, err, ConfiglessConfFile)
	}
	if _, err := LocateConf(writeTree(t, nil), ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no slurm.conf: got %v, want fs.ErrNotExist", err)
	}
	if _, err := LocateConf(both, "slurm.conf"); err == nil || !strings.Contains(err.Error(), "SLURM_CONF") {
		t.Errorf("relative SLURM_CONF: got %v, want an error naming SLURM_CONF", err)
	}
}

func TestReadConfIncludesAndRecords(t *testing.T) {
	r := writeTree(t, map[string]string{
		"/etc/slurm/slurm.conf": `# a site's slurm.conf
ClusterName=gpu
slurmdpidfile=/var/run/slurmd-%n.pid   # several slurmd per host
NodeName=gpu[01-04] CPUs=64 SlurmdParameters=ignored
PartitionName=batch Nodes=ALL Default=YES
include conf.d/*.conf
Include /etc/slurm/extra.conf
`,
		"/etc/slurm/conf.d/10-node.conf": "SlurmdParameters=numa_node_as_socket,L3cache_as_socket\n",
		"/etc/slurm/extra.conf":          `MailProg=/bin/true SlurmctldParameters="enable_configless x"` + "\n",
	})
	c, err := ReadConf(r, DefaultConfFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SlurmdPidFile("gpu01", "host1"); got != "/var/run/slurmd-gpu01.pid" {
		t.Errorf("SlurmdPidFile: got %q", got)
	}
	if got := c.SlurmdParameters(); !slices.Equal(got, []string{"numa_node_as_socket", "l3cache_as_socket"}) {
		t.Errorf("SlurmdParameters from the included file: got %q (a NodeName line's keys must not count)", got)
	}
	if !c.HasSlurmdParameter("NUMA_node_as_socket") {
		t.Error("HasSlurmdParameter is not case-blind")
	}
	if v, _ := c.Get("slurmctldparameters"); v != "enable_configless x" {
		t.Errorf("quoted value: got %q", v)
	}
	if v, ok := c.Get("MailProg"); !ok || v != "/bin/true" {
		t.Errorf("second pair on a line: got %q, %v", v, ok)
	}
	if w := c.Where("SlurmdParameters"); w != "/etc/slurm/conf.d/10-node.conf:1" {
		t.Errorf("Where: got %q", w)
	}
}

func TestReadConfDefaultsAndErrors(t *testing.T) {
	r := writeTree(t, map[string]string{
		"/etc/slurm/slurm.conf": "ClusterName=c\n",
		"/etc/slurm/loop.conf":  "Include loop.conf\n",
		"/etc/slurm/bad.conf":   "ClusterName=c\nthis is not a setting\n",
		"/etc/slurm/miss.conf":  "Include /etc/slurm/nothere.conf\n",
	})
	c, err := ReadConf(r, DefaultConfFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SlurmdPidFile("n", "h"); got != DefaultSlurmdPidFile {
		t.Errorf("default SlurmdPidFile: got %q", got)
	}
	if len(c.SlurmdParameters()) != 0 {
		t.Errorf("no SlurmdParameters: got %q", c.SlurmdParameters())
	}
	if _, err := ReadConf(r, "/etc/slurm/loop.conf"); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("Include loop: got %v", err)
	}
	if _, err := ReadConf(r, "/etc/slurm/bad.conf"); err == nil || !strings.Contains(err.Error(), "/etc/slurm/bad.conf:2") {
		t.Errorf("bad line: got %v, want the file and line", err)
	}
	if _, err := ReadConf(r, "/etc/slurm/miss.conf"); err == nil || !strings.Contains(err.Error(), "/etc/slurm/miss.conf:1") {
		t.Errorf("missing include: got %v, want the including line", err)
	}
	if _, err := ReadConf(r, "/etc/slurm/none.conf"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing main file: got %v, want fs.ErrNotExist", err)
	}
}
