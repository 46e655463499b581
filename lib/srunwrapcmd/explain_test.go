package srunwrapcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
)

// --explain's first line and note count the node's GPUs as a person would:
// "over all 8 GPUs", "over the node's one GPU", "on a node without GPUs"
// (never "all 0 GPUs"); outside a step the note names the unset variable
// once; a missing node description is said once, with its path.
func TestExplainWording(t *testing.T) {
	noGPU := testroot.Unpack(t, "dgxh100")
	if err := os.RemoveAll(filepath.Join(noGPU, "proc/driver/nvidia")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		root, tasks, head string
	}{
		{testroot.Shared(t, "dgxh100"), "8", "node dgxh100-01: 8 ranks over all 8 GPUs (--tasks)"},
		{testroot.Shared(t, "h200x1"), "8", "node node: 8 ranks over the node's one GPU (--tasks)"},
		{testroot.Shared(t, "h200x1"), "", "node node: 1 rank over the node's one GPU (one per GPU)"},
		{noGPU, "8", "node dgxh100-01: 8 ranks on a node without GPUs (--tasks)"},
		{noGPU, "", "node dgxh100-01: 1 rank on a node without GPUs (one per GPU, at least one)"},
	}
	for _, c := range cases {
		f := &fakeOS{allowed: cpuset.MustParse("0-1"), job: cpuset.MustParse("0-1")}
		args := []string{"--root", c.root, "--explain"}
		if c.tasks != "" {
			args = append(args, "--tasks", c.tasks)
		}
		code, out, stderr := runWrap(t, f, nil, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.head, code, stderr)
		}
		lines := strings.Split(out, "\n")
		_, plan, _ := strings.Cut(c.head, ": ")
		want := []string{
			c.head,
			"  node from sysfs (no node description at " + filepath.Join(c.root, "run/gpuprep/node-description") + ")",
			"  config from built-in settings (no node description from gpuprep-prolog)",
			"  note: not in a Slurm step (SLURM_PROCID is not set): planning " + plan,
		}
		if len(lines) < 4 || strings.Join(lines[:4], "\n") != strings.Join(want, "\n") {
			t.Errorf("--explain %v begins\n%s\nwant\n%s", args[2:], strings.Join(lines[:min(4, len(lines))], "\n"), strings.Join(want, "\n"))
		}
	}
}
