package hookcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// --dry-run shows the [mig] check of each of the job's GPUs that
// [mig.layout] names, in the table and in JSON; a mismatch exits 1 with the
// reason, as the prolog would (mock:dgxa100: GPU 0 has 3g.20gb+2g.10gb).
func TestDryRunShowsMIGCheck(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Unpack(t, "dgxa100")
	var gres strings.Builder
	for _, d := range testroot.GPUs(t, root) {
		fmt.Fprintf(&gres, "Name=gpu File=/dev/nvidia%d\n", d.Minor)
	}
	os.MkdirAll(filepath.Join(root, "etc/slurm"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "etc/slurm/gres.conf"), []byte(gres.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_USER": "dave", "SLURM_JOB_GPUS": "0,1"}
	run := func(layout string, extra ...string) (int, string, string) {
		cfg := filepath.Join(dir, "g.toml")
		os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n[profiles.default]\nvm_swappiness = 10\n[mig.layout]\n"+layout), 0o644)
		args := append([]string{"--root", root, "--gpu-backend", "mock:dgxa100", "--config", cfg, "--state-dir", filepath.Join(dir, "spool"), "--dry-run"}, extra...)
		return mainRun("prolog", env, args...)
	}
	code, out, stderr := run("\"0\" = [\"3g.20gb\", \"2g.10gb\"]\n\"1\" = []\n")
	if code != 0 || !strings.Contains(out, "mig: GPU 0 (0000:07:00.0) ok: 3g.20gb+2g.10gb") || !strings.Contains(out, "mig: GPU 1 (") {
		t.Errorf("matching layout: exit %d\n%s\n%s", code, out, stderr)
	}
	const reason = "MIG mismatch on GPU 0 (0000:07:00.0): want 7g.40gb, found 3g.20gb+2g.10gb"
	code, out, stderr = run("\"0\" = [\"7g.40gb\"]\n")
	if code != 1 || !strings.Contains(out, "mig: "+reason) || !strings.Contains(stderr, reason) {
		t.Errorf("mismatch: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = run("\"0\" = [\"7g.40gb\"]\n", "--json")
	if code != 1 || !strings.Contains(out, `"mig"`) || !strings.Contains(out, `"reason": "`+reason) && !strings.Contains(out, `"reason":"`+reason) {
		t.Errorf("mismatch --json: exit %d\n%s", code, out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "spool")); !os.IsNotExist(err) {
		t.Errorf("the dry run created the spool (%v)", err)
	}
}
