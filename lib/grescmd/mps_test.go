package grescmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// [gres] mps_gpus in --config gives the marked GPUs Name=mps records and
// the node line mps:<total>; --check holds gres.conf's mps lines to it,
// and a bad value is a one-line error naming file:line, exit 2.
func TestGresMPSFromConfig(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpuprep.toml")
	os.WriteFile(cfg, []byte("[gres]\nmps_gpus = [1]\nmps_count = 400\n"), 0o644)
	args := []string{"--root", root, "--gpu-backend", "procfs", "--config", cfg}
	out, stderr, code := gres(args...)
	if code != 0 || !strings.HasSuffix(out, "Name=gpu Type=nvidia_h200 File=/dev/nvidia1 Cores=0-31\nName=mps File=/dev/nvidia1 Count=400\n") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	line, _, _ := gres(append(args, "--format", "slurm")...)
	if !strings.Contains(line, "Gres=gpu:nvidia_h200:2,mps:400") || !strings.Contains(line, "GresTypes=gpu,mps") {
		t.Errorf("node line:\n%s", line)
	}
	conf := filepath.Join(dir, "gres.conf")
	os.WriteFile(conf, []byte(out), 0o644)
	if o, e, code := gres(append(args, "--check", conf)...); code != 0 {
		t.Errorf("--check of the generated file: exit %d\n%s%s", code, o, e)
	}
	os.WriteFile(conf, []byte(strings.Replace(out, "Name=mps File=/dev/nvidia1 Count=400", "Name=mps File=/dev/nvidia1 Count=100", 1)), 0o644)
	if o, e, code := gres(append(args, "--check", conf)...); code != 1 || !strings.Contains(o+e, "Name=mps File=/dev/nvidia1 Count=100, but [gres] mps_count = 400") {
		t.Errorf("--check with another count: exit %d\n%s%s", code, o, e)
	}
	os.WriteFile(cfg, []byte("[gres]\nmps_gpus = \"all\"\n\nmps_count = -1\n"), 0o644)
	if _, e, code := gres(args...); code != 2 || !strings.HasPrefix(e, "gpuprep-gres: "+cfg+":4: gres.mps_count = -1: must be 1..1000000") {
		t.Errorf("bad mps_count: exit %d, stderr %q", code, e)
	}
}
