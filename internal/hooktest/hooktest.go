// Package hooktest is what the tests of the node's root programs share
// (lib/hookcmd: gpuprep-prolog and gpuprep-epilog; lib/healthcmd:
// gpuprep-health): a writable DGX H100 fixture root ready for a hook or a
// health check, faults injected into its mock GPUs, and a command run with
// a Slurm-like environment. Test-only: no program links it.
package hooktest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/testroot"
	"gpuprep/lib/cli"
	"gpuprep/lib/host"
)

// HealthRoot is a writable DGX H100 root with a gres.conf, a boot id and a
// kernel log, and a config without log file or metrics, healthTOML after
// its [general]; spool is a state dir not made yet.
func HealthRoot(t *testing.T, healthTOML string) (root, cfg, spool string) {
	t.Helper()
	root = testroot.Unpack(t, "dgxh100")
	write := func(p, s string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gres strings.Builder
	for _, d := range testroot.GPUs(t, root) {
		gres.WriteString("Name=gpu File=/dev/nvidia" + strconv.Itoa(d.Minor) + "\n")
	}
	write("etc/slurm/gres.conf", gres.String())
	write("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n")
	write("dev/kmsg", "6,0,0,-;Linux version 6.1.0\n")
	dir := t.TempDir()
	cfg = filepath.Join(dir, "g.toml")
	if err := os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"+healthTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, cfg, filepath.Join(dir, "spool")
}

// InjectFault writes a mock GPU's faults file (read when the mock opens).
func InjectFault(t *testing.T, root string, gpu int, f gpumock.Faults) {
	t.Helper()
	uuid := testroot.GPUs(t, root)[gpu].UUID
	p := gpumock.FaultsFile(host.NewRoot(root), uuid)
	os.MkdirAll(filepath.Dir(p), 0o755)
	b, _ := json.Marshal(f)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Run runs a command (hookcmd.Prolog, healthcmd.Main, ...) with args and
// the environment env, and returns its exit code, stdout and stderr.
func Run(cmd func(cli.Env) int, env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cmd(cli.Env{Args: args, Getenv: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// WriteRootFile writes a file of the fixture root (its folders made).
func WriteRootFile(t *testing.T, root, path, content string) {
	t.Helper()
	full := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
