package gresgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// confRoot is a fixture root of the given node files.
func confRoot(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	return host.NewRoot(testroot.Files(t, files))
}

// TestReadSlurmdView: SlurmdParameters is read from the slurm.conf the
// node's slurmd reads (SLURM_CONF, /etc/slurm/slurm.conf, the configless
// copy; Include lines followed); l3cache_as_socket wins over
// numa_node_as_socket as in slurmd; no slurm.conf is real sockets; one that
// cannot be read is real sockets with the problem said.
func TestReadSlurmdView(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		env     string
		sockets SocketView
		conf    string
		where   string
		problem string
	}{
		{"none", nil, "", SocketsReal, "", "", ""},
		{"etc", map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\nSlurmdParameters=numa_node_as_socket\n"}, "",
			SocketsNUMA, "/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf:2", ""},
		{"no parameter", map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\n"}, "",
			SocketsReal, "/etc/slurm/slurm.conf", "", ""},
		{"include", map[string]string{
			"/etc/slurm/slurm.conf":          "ClusterName=c\nInclude conf.d/*.conf\n",
			"/etc/slurm/conf.d/50-node.conf": "# NPS4 nodes\nSlurmdParameters=Numa_Node_As_Socket\n",
		}, "", SocketsNUMA, "/etc/slurm/slurm.conf", "/etc/slurm/conf.d/50-node.conf:2", ""},
		{"SLURM_CONF", map[string]string{
			"/etc/slurm/slurm.conf": "ClusterName=c\n",
			"/srv/slurm/slurm.conf": "SlurmdParameters=numa_node_as_socket\n",
		}, "/srv/slurm/slurm.conf", SocketsNUMA, "/srv/slurm/slurm.conf", "/srv/slurm/slurm.conf:1", ""},
		{"configless", map[string]string{"/run/slurm/conf/slurm.conf": "SlurmdParameters=l3cache_as_socket\n"}, "",
			SocketsL3, "/run/slurm/conf/slurm.conf", "/run/slurm/conf/slurm.conf:1", ""},
		{"both", map[string]string{"/etc/slurm/slurm.conf": "SlurmdParameters=numa_node_as_socket,l3cache_as_socket\n"}, "",
			SocketsL3, "/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf:1", ""},
		{"SLURM_CONF missing", nil, "/srv/none.conf", SocketsReal, "/srv/none.conf", "", "/srv/none.conf"},
		{"unparsable", map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\nnot a setting\n"}, "",
			SocketsReal, "/etc/slurm/slurm.conf", "", "/etc/slurm/slurm.conf:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ReadSlurmdView(confRoot(t, tc.files), tc.env, "")
			if err != nil {
				t.Fatal(err)
			}
			if v.Sockets != tc.sockets || v.Conf != tc.conf || v.Where != tc.where ||
				(tc.problem == "") != (v.Problem == "") || !strings.Contains(v.Problem, tc.problem) {
				t.Errorf("got %+v", *v)
			}
		})
	}
}

// TestReadSlurmdViewGivenFile: --slurm-conf reads a file on this machine in
// place of the node's; a file that cannot be read is an error.
func TestReadSlurmdViewGivenFile(t *testing.T) {
	node := confRoot(t, map[string]string{"/etc/slurm/slurm.conf": "ClusterName=c\n"})
	dir := t.TempDir()
	file := filepath.Join(dir, "other.conf")
	os.WriteFile(file, []byte("SlurmdParameters=numa_node_as_socket\n"), 0o644)
	v, err := ReadSlurmdView(node, "", file)
	if err != nil || v.Sockets != SocketsNUMA || v.Conf != file {
		t.Errorf("--slurm-conf: %+v, %v", v, err)
	}
	if _, err := ReadSlurmdView(node, "", filepath.Join(dir, "none.conf")); err == nil || !strings.Contains(err.Error(), "--slurm-conf") {
		t.Errorf("missing --slurm-conf file: %v", err)
	}
}
