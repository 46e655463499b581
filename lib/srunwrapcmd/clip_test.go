package srunwrapcmd

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"gpuprep/lib/cmdenv"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
)

// maxLine is the longest line srunwrap may write about a value of the
// user's: at most 200 bytes of the value, the count of what was cut, and
// the words around it (the longest finding says about 230 bytes).
const maxLine = 512

// long is a value of n bytes: prefix, then filler.
func long(prefix string, n int, filler string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len() < n {
		b.WriteString(filler)
	}
	return b.String()[:n]
}

// manyUUIDs is a CUDA_VISIBLE_DEVICES of n bytes of GPU UUIDs that are on
// no node.
func manyUUIDs(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "GPU-%08x-dead-beef-0000-000000000000,", i)
	}
	return b.String()[:n]
}

// checkLines fails the test for any line of out longer than maxLine, and
// unless some line says how much of a value it did not show.
func checkLines(t *testing.T, what, out string, echoed bool) {
	t.Helper()
	clipped, over, first := false, 0, ""
	for _, l := range strings.Split(out, "\n") {
		if len(l) > maxLine {
			if over++; over == 1 {
				first = l
			}
		}
		if strings.Contains(l, " not shown)") {
			clipped = true
		}
	}
	if over > 0 {
		t.Errorf("%s: %d lines over %d bytes, the first of %d: %.200s…", what, over, maxLine, len(first), first)
	}
	if echoed && !clipped {
		t.Errorf("%s: no line says how much of the value it cut:\n%.1000s", what, out)
	}
}

// A 109 KB value of a variable srunwrap echoes (CUDA_VISIBLE_DEVICES in a
// warning, NCCL_* in a finding, the MPS directory in --verbose and
// --explain, the command's name in an error) is shown as its first 200
// bytes and a count of what was cut, on a line at most 512 bytes; the
// command still runs with the value as it was.
func TestLongValuesClipped(t *testing.T) {
	root, all := dgxh100(t)
	const n = 109012
	// Where each value is echoed: on stderr by a run, on --explain's
	// output.
	const run, explain = 1, 2
	for _, c := range []struct {
		name, val string
		args      []string
		echoed    int
	}{
		{"CUDA_VISIBLE_DEVICES", long("GPU-", n, "a"), nil, run | explain},
		{"CUDA_VISIBLE_DEVICES", manyUUIDs(n), nil, run | explain},
		{"CUDA_VISIBLE_DEVICES", long("0,", n, "\x01"), nil, run | explain},
		{"NCCL_TOPO_FILE", long("/etc/nccl/", n, "x/"), nil, run},
		{"NCCL_TOPO_FILE", long("/etc/nccl/topo", n, "x"), nil, run},
		{"NCCL_IB_HCA", long("=mlx5_0:1,", n, "mlx5_9:1,"), nil, run | explain},
		{"NCCL_IB_HCA", long("=mlx5_0:", n, "9"), nil, run | explain},
		{"NCCL_IB_HCA", long("=mlx5_0:1,", n, "mlx5_9:1,"), []string{"-v"}, run | explain},
		{"NCCL_IB_HCA", long("=mlx5_0:1,", n, "\n"), []string{"-v"}, run | explain},
		{"NCCL_ALGO", long("Ring", n, ",Tree"), nil, run},
		{"NCCL_DEBUG_SUBSYS", long("INIT,COLL", n, ",ALL"), nil, run},
		{"CUDA_MPS_PIPE_DIRECTORY", long("/tmp/mps", n, "/d"), []string{"-v"}, run | explain},
		{"SLURMD_NODENAME", long("node", n, "x"), nil, explain},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := withVar(rankEnv(0, 8), c.name, c.val)
			if c.name == "NCCL_DEBUG_SUBSYS" {
				env = withVar(env, "NCCL_DEBUG", "INFO")
			}
			f := &fakeOS{allowed: all, job: all}
			args := append(append([]string{"--root", root}, c.args...), "--", "python")
			_, _, stderr := runWrap(t, f, env, args...)
			if f.execCalls != 1 {
				t.Fatalf("exec calls %d: want the command run; stderr %.2000s", f.execCalls, stderr)
			}
			if got := envOf(f.execEnv, c.name); c.name != "CUDA_VISIBLE_DEVICES" && got != envOf(env, c.name) {
				t.Errorf("%s passed on as %d bytes, want %d", c.name, len(got), len(envOf(env, c.name)))
			}
			checkLines(t, "stderr", stderr, c.echoed&run != 0)
			f = &fakeOS{allowed: all, job: all}
			_, out, stderr := runWrap(t, f, env, "--root", root, "--explain")
			checkLines(t, "--explain", out+stderr, c.echoed&explain != 0)
		})
	}
}

// The command's name is the user's too: a 109 KB name that is not found
// is named clipped.
func TestLongCommandClipped(t *testing.T) {
	root, all := dgxh100(t)
	f := &fakeOS{allowed: all, job: all}
	name := long("missing-cmd", 109012, "z")
	sys := f.system(rankEnv(0, 8))
	sys.lookPath = func(file string) (string, error) { return "", &exec.Error{Name: file, Err: exec.ErrNotFound} }
	var errb bytes.Buffer
	env := rankEnv(0, 8)
	e := cmdenv.Env{Args: []string{"--root", root, "--", name}, Getenv: func(k string) string { return envOf(env, k) }, Stdout: &errb, Stderr: &errb}
	if code := run(e, sys); code != exitNotFound {
		t.Errorf("exit %d: %.500s", code, errb.String())
	}
	checkLines(t, "stderr", errb.String(), true)
}

// The prolog's notices for the job name the node as SLURMD_NODENAME does.
func TestLongNodeNameInNotice(t *testing.T) {
	_, all := dgxh100(t)
	root := descRoot(t, "")
	if err := nodedesc.WriteNotice(host.NewRoot(root), nodedesc.Notice{Job: 77, Messages: []string{"profile \"x\" is not allowed"}}); err != nil {
		t.Fatal(err)
	}
	f := &fakeOS{allowed: all, job: all}
	_, _, stderr := runWrap(t, f, withVar(rankEnv(0, 8), "SLURMD_NODENAME", long("node", 109012, "x")), "--root", root, "--", "python")
	checkLines(t, "stderr", stderr, true)
}
