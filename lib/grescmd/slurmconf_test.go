package grescmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cli"
)

// gresEnv is gres with environment variables.
func gresEnv(env map[string]string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(cli.Env{Args: args, Getenv: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), code
}

// TestGresSNCFollowsNodeSlurmConf: on a dual Xeon in SNC2 (snc2xeon: 2
// sockets of 20 cores, 4 NUMA nodes, one L3 per socket) the default node
// line reads the node's own slurm.conf under --root: real sockets without
// one (what slurmd -C counts), NUMA nodes where /etc/slurm/slurm.conf sets
// numa_node_as_socket through an Include, the file SLURM_CONF names in
// place of /etc/slurm/slurm.conf, and the configless copy; an explicit
// --numa-as-socket[=false] wins.
func TestGresSNCFollowsNodeSlurmConf(t *testing.T) {
	root := testroot.Unpack(t, "snc2xeon")
	base := []string{"--root", root, "--gpu-backend", "procfs", "--format", "slurm"}
	write := func(p, body string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, env map[string]string, args []string, line, note string) {
		t.Helper()
		out, stderr, code := gresEnv(env, append(append([]string{}, base...), args...)...)
		if code != 0 || !strings.Contains(out, line) || !strings.Contains(out, note) {
			t.Errorf("%s: exit %d, want %q and %q\n%s%s", name, code, line, note, out, stderr)
		}
	}
	check("no slurm.conf", nil, nil, "CPUs=80 Sockets=2 CoresPerSocket=20 ThreadsPerCore=2",
		"# Sockets=2 counts real sockets, as slurmd will: no slurm.conf found")

	write("/run/slurm/conf/slurm.conf", "SlurmdParameters=numa_node_as_socket\n")
	check("configless", nil, nil, "Sockets=4 CoresPerSocket=10", "as slurmd will: /run/slurm/conf/slurm.conf:1 sets SlurmdParameters=numa_node_as_socket")

	write("/etc/slurm/slurm.conf", "ClusterName=c\nInclude slurm.conf.d/*.conf\n")
	check("etc without the parameter", nil, nil, "Sockets=2 CoresPerSocket=20", "as slurmd will: /etc/slurm/slurm.conf sets no SlurmdParameters")
	write("/etc/slurm/slurm.conf.d/gpu.conf", "SlurmdParameters=numa_node_as_socket\n")
	check("Include", nil, nil, "Sockets=4 CoresPerSocket=10 ThreadsPerCore=2",
		"# Sockets=4 counts NUMA nodes, as slurmd will: /etc/slurm/slurm.conf.d/gpu.conf:1 sets SlurmdParameters=numa_node_as_socket")
	check("--numa-as-socket=false", nil, []string{"--numa-as-socket=false"}, "Sockets=2 CoresPerSocket=20", "as --numa-as-socket=false asks")

	write("/srv/slurm/slurm.conf", "SlurmdParameters=l3cache_as_socket\n")
	env := map[string]string{"SLURM_CONF": "/srv/slurm/slurm.conf"}
	check("SLURM_CONF", env, nil, "Sockets=2 CoresPerSocket=20", "# Sockets=2 counts L3 caches, as slurmd will: /srv/slurm/slurm.conf:1 sets SlurmdParameters=l3cache_as_socket")
	check("--numa-as-socket", env, []string{"--numa-as-socket"}, "Sockets=4 CoresPerSocket=10", "as --numa-as-socket asks")
}
